// Prometheus text exposition (0.0.4) of the server's metrics: parsed back line by line.
#include "polytope/server/metrics_text.h"

#include <catch2/catch.hpp>

#include <limits>
#include <map>
// GCC 12 at -O2 with the sanitizers warns of a maybe-uninitialized std::function inside libstdc++'s own
// std::regex (a false positive in the library, not about this file).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace polytope;
using namespace polytope::server;

namespace
{

struct Sample
{
    std::string name;
    std::map<std::string, std::string> labels;
    std::string value;
};

struct Exposition
{
    std::vector<Sample> samples;
    std::map<std::string, std::string> types; ///< family -> counter, gauge, histogram
    std::set<std::string> helps;
    std::vector<std::string> errors;

    std::vector<Sample> find(const std::string& name,
                             const std::map<std::string, std::string>& labels = {}) const
    {
        std::vector<Sample> out;
        for (const Sample& s : samples)
        {
            bool match = s.name == name;
            for (const auto& [key, value] : labels)
            {
                const auto it = s.labels.find(key);
                match = match && it != s.labels.end() && it->second == value;
            }
            if (match)
            {
                out.push_back(s);
            }
        }
        return out;
    }
    std::string value(const std::string& name, const std::map<std::string, std::string>& labels) const
    {
        const std::vector<Sample> found = find(name, labels);
        if (found.size() == 1)
        {
            return found.front().value;
        }
        std::string none = std::to_string(found.size());
        none += " samples";
        return none;
    }
};

/// A strict reader of the subset renderPrometheus writes: HELP/TYPE comments and `name{labels} value`.
Exposition parseExposition(const std::string& text)
{
    Exposition out;
    static const std::regex helpLine(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) \S.*)");
    static const std::regex typeLine(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram))");
    static const std::regex sampleLine(R"(([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+))");
    static const std::regex label(R"(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)\"(,|$))");
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line))
    {
        std::smatch m;
        if (std::regex_match(line, m, helpLine))
        {
            out.helps.insert(m[1]);
        }
        else if (std::regex_match(line, m, typeLine))
        {
            if (out.types.count(m[1]))
            {
                out.errors.push_back("TYPE twice: " + line);
            }
            out.types[m[1]] = m[2];
        }
        else if (std::regex_match(line, m, sampleLine))
        {
            Sample sample{m[1], {}, m[3]};
            const std::string labels = m[2];
            std::size_t consumed = 0;
            for (auto it = std::sregex_iterator(labels.begin(), labels.end(), label);
                 it != std::sregex_iterator(); ++it)
            {
                if (static_cast<std::size_t>(it->position()) != consumed)
                {
                    out.errors.push_back("bad labels: " + line);
                }
                sample.labels[(*it)[1]] = (*it)[2];
                consumed = static_cast<std::size_t>(it->position() + it->length());
            }
            if (consumed != labels.size())
            {
                out.errors.push_back("bad labels: " + line);
            }
            out.samples.push_back(sample);
        }
        else
        {
            out.errors.push_back("unreadable line: " + line);
        }
    }
    if (!text.empty() && text.back() != '\n')
    {
        out.errors.push_back("no final line feed");
    }
    return out;
}

/// The family a sample belongs to (histogram samples carry a suffix).
std::string familyOf(const std::string& name, const std::map<std::string, std::string>& types)
{
    for (const char* suffix : {"_bucket", "_sum", "_count"})
    {
        const std::string s = suffix;
        if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0)
        {
            const std::string base = name.substr(0, name.size() - s.size());
            if (types.count(base) && types.at(base) == "histogram")
            {
                return base;
            }
        }
    }
    return name;
}

RoomMetrics sampleMetrics(std::uint64_t seed)
{
    RoomMetrics m;
    m.overruns = 2 + seed;
    m.datagramsIn = 300 + seed;
    m.bytesIn = 45000 + seed;
    m.datagramsOut = 600 + seed;
    m.bytesOut = 900000 + seed;
    m.clientsAccepted = 5 + seed;
    m.clientsDenied = 1 + seed;
    m.clientsTimedOut = 3 + seed;
    m.inputsReceived = 70 + seed;
    m.snapshotsSent = 120 + seed;
    m.encodeSeconds = 0.125;
    m.drops.add(protocol::DropReason::TooShort);
    m.drops.add(protocol::DropReason::TooShort);
    m.drops.add(protocol::DropReason::BadCookie);
    return m;
}

} // namespace

TEST_CASE("tick time histogram: buckets by upper bound, sum and count", "[server][metrics]")
{
    TickTimeHistogram h;
    h.observe(0.0001);  // first bucket
    h.observe(0.00025); // upper bounds are inclusive: still the first
    h.observe(0.003);   // le 0.004
    h.observe(0.5);     // +Inf
    h.observe(-1.0);    // counted as 0
    CHECK(h.count() == 5);
    CHECK(h.sum() == Approx(0.0001 + 0.00025 + 0.003 + 0.5));
    CHECK(h.bucketCounts()[0] == 3);
    CHECK(h.bucketCounts()[4] == 1);
    CHECK(h.bucketCounts().back() == 1);
}

TEST_CASE("prometheus text: families, labels, values and histogram of two rooms", "[server][metrics]")
{
    const RoomMetrics a = sampleMetrics(0);
    const RoomMetrics b = sampleMetrics(7);
    TickTimeHistogram ticks;
    for (int i = 0; i < 100; ++i)
    {
        ticks.observe(0.0002 * (i % 9)); // 0 .. 1.6 ms
    }
    ticks.observe(0.2); // one over every finite bucket
    const RoomMetricsView rooms[] = {
        {"default", &a, 3, 26, &ticks, 4, 1000},
        {"odd \"room\"\\", &b, 0, 1000, nullptr, 0, 1007},
    };
    const std::string text = renderPrometheus(rooms);
    const Exposition e = parseExposition(text);
    INFO(text);
    REQUIRE(e.errors.empty());

    SECTION("every family has HELP and TYPE, counters end in _total, every sample is typed and has a room")
    {
        for (const auto& [family, type] : e.types)
        {
            CHECK(e.helps.count(family) == 1);
            if (type == "counter")
            {
                CHECK_THAT(family, Catch::EndsWith("_total"));
            }
        }
        for (const Sample& s : e.samples)
        {
            INFO(s.name);
            CHECK(e.types.count(familyOf(s.name, e.types)) == 1);
            CHECK(s.labels.count("room") == 1);
        }
        CHECK(e.types.at("polytope_clients") == "gauge");
        CHECK(e.types.at("polytope_bodies") == "gauge");
        CHECK(e.types.at("polytope_tick_duration_seconds") == "histogram");
    }
    SECTION("values per room")
    {
        CHECK(e.value("polytope_ticks_total", {{"room", "default"}}) == "1000");
        CHECK(e.value("polytope_ticks_total", {{"room", "odd \\\"room\\\"\\\\"}}) == "1007");
        CHECK(e.value("polytope_tick_overruns_total", {{"room", "default"}}) == "2");
        CHECK(e.value("polytope_clients", {{"room", "default"}}) == "3");
        CHECK(e.value("polytope_bodies", {{"room", "default"}}) == "26");
        CHECK(e.value("polytope_bodies", {{"room", "odd \\\"room\\\"\\\\"}}) == "1000");
        CHECK(e.value("polytope_received_bytes_total", {{"room", "default"}}) == "45000");
        CHECK(e.value("polytope_sent_bytes_total", {{"room", "default"}}) == "900000");
        CHECK(e.value("polytope_datagrams_received_total", {{"room", "default"}}) == "300");
        CHECK(e.value("polytope_datagrams_sent_total", {{"room", "default"}}) == "600");
        CHECK(e.value("polytope_clients_accepted_total", {{"room", "default"}}) == "5");
        CHECK(e.value("polytope_clients_denied_total", {{"room", "default"}}) == "1");
        CHECK(e.value("polytope_clients_timed_out_total", {{"room", "default"}}) == "3");
        CHECK(e.value("polytope_inputs_received_total", {{"room", "default"}}) == "70");
        CHECK(e.value("polytope_snapshots_sent_total", {{"room", "default"}}) == "120");
        CHECK(e.value("polytope_send_errors_total", {{"room", "default"}}) == "4");
        CHECK(e.value("polytope_snapshot_encode_seconds_total", {{"room", "default"}}) == "0.125");
    }
    SECTION("dropped datagrams: one series per reason and room")
    {
        CHECK(e.find("polytope_datagrams_dropped_total", {{"room", "default"}}).size() ==
              protocol::kDropReasonCount);
        CHECK(e.value("polytope_datagrams_dropped_total", {{"room", "default"}, {"reason", "too_short"}}) ==
              "2");
        CHECK(e.value("polytope_datagrams_dropped_total",
                      {{"room", "default"},
                       {"reason", protocol::dropReasonName(protocol::DropReason::BadCookie)}}) == "1");
        CHECK(e.value("polytope_datagrams_dropped_total",
                      {{"room", "default"},
                       {"reason", protocol::dropReasonName(protocol::DropReason::Malformed)}}) == "0");
    }
    SECTION("histogram: cumulative buckets in order, +Inf equals count")
    {
        const std::vector<Sample> buckets =
            e.find("polytope_tick_duration_seconds_bucket", {{"room", "default"}});
        REQUIRE(buckets.size() == TickTimeHistogram::kBucketCount);
        std::uint64_t previous = 0;
        double previousBound = -1.0;
        for (std::size_t i = 0; i < buckets.size(); ++i)
        {
            const std::string le = buckets[i].labels.at("le");
            const double bound = le == "+Inf" ? std::numeric_limits<double>::infinity() : std::stod(le);
            CHECK(bound > previousBound);
            if (i < TickTimeHistogram::kUpperBounds.size())
            {
                CHECK(bound == TickTimeHistogram::kUpperBounds[i]);
            }
            previousBound = bound;
            const std::uint64_t cumulative = std::stoull(buckets[i].value);
            CHECK(cumulative >= previous);
            previous = cumulative;
        }
        CHECK(buckets.back().labels.at("le") == "+Inf");
        CHECK(buckets.back().value == "101");
        CHECK(e.value("polytope_tick_duration_seconds_count", {{"room", "default"}}) == "101");
        CHECK(std::stod(e.value("polytope_tick_duration_seconds_sum", {{"room", "default"}})) ==
              Approx(ticks.sum()));
        // 0.2 ms steps: 0 and 0.2 ms fall in le=0.00025 (2 of every 9).
        CHECK(buckets[0].value == std::to_string(ticks.bucketCounts()[0]));
        // The room without a histogram has none.
        CHECK(e.find("polytope_tick_duration_seconds_count", {{"room", "odd \\\"room\\\"\\\\"}}).empty());
    }
    SECTION("each family's samples are grouped after its TYPE line")
    {
        std::string current;
        std::set<std::string> closed;
        std::istringstream lines(text);
        std::string line;
        while (std::getline(lines, line))
        {
            if (line.rfind("# TYPE ", 0) == 0)
            {
                if (!current.empty())
                {
                    closed.insert(current);
                }
                current = line.substr(7, line.find(' ', 7) - 7);
                CHECK(closed.count(current) == 0);
            }
            else if (line[0] != '#')
            {
                CHECK(familyOf(line.substr(0, line.find('{')), e.types) == current);
            }
        }
    }
}

TEST_CASE("prometheus text: label escaping and no rooms", "[server][metrics]")
{
    CHECK(escapeLabelValue("plain") == "plain");
    CHECK(escapeLabelValue("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
    const std::string empty = renderPrometheus({});
    const Exposition e = parseExposition(empty);
    CHECK(e.errors.empty());
    CHECK(e.samples.empty());
    CHECK(e.types.count("polytope_ticks_total") == 1);
}
