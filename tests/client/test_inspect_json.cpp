// polytope-inspect's JSON (client/inspect_json.h): what a server or a recording supplies (scene name, server
// address) comes back unchanged through a JSON parser, quotes, backslashes and control characters included;
// bytes that are not UTF-8 do not stop the output; numbers keep their precision.
#include "polytope/client/inspect_json.h"
#include "polytope/client/json_output.h"

#include <flatbuffers/idl.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace polytope;

namespace
{

client::SnapshotBody body(std::uint32_t id, protocol::wire::ShapeKind shape)
{
    client::SnapshotBody b;
    b.id = id;
    b.generation = 2;
    b.shape = shape;
    b.position = {0.1f, -2.5f, 1e-7f};
    b.orientation = {0.0f, 0.6f, 0.0f, 0.8f};
    return b;
}

} // namespace

TEST_CASE("inspect stats JSON: a scene name with a quote, a backslash and a control character round-trips",
          "[client][inspect]")
{
    const std::string scene = std::string("a\"b\\") + '\x01' + "\n\t" + '\x1f' + "end";
    const std::string server = "[::1]:7777 \"quoted\"";
    client::RecordingHeader header;
    header.scene = scene;
    header.server = server;
    header.tickRateHz = 60;
    header.snapshotRateHz = 20;
    client::RecordingSummary summary;
    summary.frames = 42;
    summary.lastTick = 1234567890123ull;
    summary.durationSeconds = 2.0 / 3.0;
    summary.meanBodies = 10.5;

    const std::string text =
        client::jsonText(client::recordingSummaryJson("dir/\"file\".pltr", header, summary, true));
    INFO(text);
    CHECK(text.find('\n') == std::string::npos); // one line per object
    const nlohmann::json parsed = nlohmann::json::parse(text);
    CHECK(parsed.at("scene").get<std::string>() == scene);
    CHECK(parsed.at("server").get<std::string>() == server);
    CHECK(parsed.at("file").get<std::string>() == "dir/\"file\".pltr");
    CHECK(parsed.at("frames").get<std::uint64_t>() == 42);
    CHECK(parsed.at("last_tick").get<std::uint64_t>() == 1234567890123ull);
    CHECK(parsed.at("tick_rate_hz").get<int>() == 60);
    CHECK(parsed.at("duration_seconds").get<double>() == 0.666667); // printed to 6 decimals, as always
    CHECK(parsed.at("mean_bodies").get<double>() == 10.5);
    CHECK(parsed.at("index_rebuilt").get<bool>());
    // The keys in the order the tool has always printed them.
    CHECK(text.rfind("{\"file\":", 0) == 0);
}

TEST_CASE("inspect JSON: bytes that are not UTF-8 are replaced, not thrown over", "[client][inspect]")
{
    client::RecordingHeader header;
    header.scene = std::string("bad \xff\xfe bytes");
    const std::string text = client::jsonText(client::recordingSummaryJson("f", header, {}, false));
    const nlohmann::json parsed = nlohmann::json::parse(text);
    CHECK(parsed.at("scene").get<std::string>() == "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes"); // U+FFFD twice
}

TEST_CASE("inspect snapshot JSON: bodies filtered, floats in their shortest form, a followed body or null",
          "[client][inspect]")
{
    client::ReceivedSnapshot snapshot;
    snapshot.tick = 99;
    snapshot.serverTime = 1.65;
    snapshot.bodies = {body(1, protocol::wire::ShapeKind::Box), body(4, protocol::wire::ShapeKind::Plane)};

    const auto all = nlohmann::json::parse(client::jsonText(client::snapshotJson(snapshot)));
    CHECK(all.at("tick").get<std::uint64_t>() == 99);
    CHECK(all.at("time").get<double>() == 1.65);
    REQUIRE(all.at("bodies").size() == 2);
    const auto& first = all.at("bodies").at(0);
    CHECK(first.at("id").get<std::uint32_t>() == 1);
    CHECK(first.at("generation").get<std::uint32_t>() == 2);
    CHECK(first.at("shape").get<std::string>() == "box");
    CHECK_FALSE(first.at("at_rest").get<bool>());
    CHECK(static_cast<float>(first.at("position").at(0).get<double>()) == 0.1f);
    CHECK(first.at("position").at(0).get<double>() == 0.1); // not 0.10000000149011612
    CHECK(static_cast<float>(first.at("position").at(2).get<double>()) == 1e-7f);
    CHECK(first.at("orientation").size() == 4);
    CHECK_FALSE(first.contains("velocity"));

    const auto notPlane = [](const client::SnapshotBody& b)
    { return b.shape != protocol::wire::ShapeKind::Plane; };
    const auto noPlanes = nlohmann::json::parse(client::jsonText(client::snapshotJson(snapshot, notPlane)));
    CHECK(noPlanes.at("bodies").size() == 1);

    const std::array<double, 3> velocity{1.0 / 3.0, 0.0, -2.0};
    const auto followed = nlohmann::json::parse(
        client::jsonText(client::followedBodyJson(snapshot, &snapshot.bodies[0], velocity)));
    CHECK(followed.at("body").at("velocity").at(0).get<double>() == 0.333333); // 6 significant digits
    CHECK(followed.at("body").at("velocity").at(2).get<double>() == -2.0);
    const auto missing =
        nlohmann::json::parse(client::jsonText(client::followedBodyJson(snapshot, nullptr, velocity)));
    CHECK(missing.at("body").is_null());
}

TEST_CASE("JSON numbers: rounded as printf rounds them; not finite is null", "[client][inspect]")
{
    CHECK(client::roundedDecimals(2.0 / 3.0, 3) == 0.667);
    CHECK(client::roundedSignificant(123456789.0, 6) == 123457000.0);
    CHECK(client::shortestFloat(0.3f) == 0.3);
    nlohmann::ordered_json value;
    value["x"] = client::roundedDecimals(std::numeric_limits<double>::quiet_NaN(), 3);
    CHECK(client::jsonText(value) == "{\"x\":null}");
}

TEST_CASE("game states print as JSON: the game's FlatBuffers table, JSON text, or hex", "[client][inspect]")
{
    const auto bytesOf = [](std::string_view text)
    { return std::vector<std::uint8_t>(text.begin(), text.end()); };
    client::GameStateDecoder plain;
    CHECK(plain.decode(bytesOf(R"({"red": 2, "blue": 1})")) ==
          nlohmann::ordered_json::parse(R"({"red":2,"blue":1})"));
    const nlohmann::ordered_json hex = plain.decode(std::vector<std::uint8_t>{0x00, 0xAB, 0xFF});
    CHECK(hex["bytes"] == 3);
    CHECK(hex["hex"] == "00abff");

    // A game's schema, and a buffer of it built with the same parser.
    const std::string schema = "table Score { red: int; blue: int; names: [string]; } root_type Score;";
    client::GameStateDecoder typed;
    std::string error;
    REQUIRE(typed.setSchema(schema, error));
    flatbuffers::Parser builder;
    REQUIRE(builder.Parse(schema.c_str()));
    REQUIRE(builder.ParseJson(R"({"red": 3, "blue": 4, "names": ["ann", "bo"]})"));
    const std::vector<std::uint8_t> buffer(builder.builder_.GetBufferPointer(),
                                           builder.builder_.GetBufferPointer() + builder.builder_.GetSize());
    const nlohmann::ordered_json decoded = typed.decode(buffer);
    CHECK(decoded["red"] == 3);
    CHECK(decoded["blue"] == 4);
    CHECK(decoded["names"] == nlohmann::ordered_json::array({"ann", "bo"}));

    // Bytes that do not verify as the table are shown raw with the reason, never read.
    std::vector<std::uint8_t> damaged = buffer;
    damaged[0] = 0xFF;
    damaged[1] = 0xFF;
    const nlohmann::ordered_json refused = typed.decode(damaged);
    CHECK(refused.contains("hex"));
    CHECK(refused.contains("error"));
    CHECK_FALSE(typed.setSchema("table {", error));
    CHECK_FALSE(typed.setSchema("table T { a: int; }", error)); // no root_type
    CHECK(error.find("root_type") != std::string::npos);

    client::GameState room;
    room.version = 2;
    room.data = bytesOf(R"({"round": 1})");
    const nlohmann::ordered_json record = client::gameStatesJson(120, room, client::GameState{}, plain);
    CHECK(record["tick"] == 120);
    CHECK(record["room"]["version"] == 2);
    CHECK(record["room"]["value"]["round"] == 1);
    CHECK(record["client"].is_null());
}
