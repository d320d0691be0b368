// polytope-abuse: floods a local polytope-server the way an outside attacker would, and measures what a
// legitimate client and an operator get meanwhile. Loopback only: every datagram goes to 127.0.0.1 (or
// the address given, which must be a loopback one), and every run is bounded in time. bench/abuse.sh starts
// the servers and reads their /metrics.
//
//   polytope-abuse spoof --server 127.0.0.1:PORT --token FILE [--addresses 20000] [--rate 7000]
//                        [--seconds 6] [--legit-after 3]
//       admin requests of 320 bytes with random MACs from `addresses` spoofed sources (127.16.0.0 and up:
//       Linux delivers all of 127.0.0.0/8 locally, and IP_PKTINFO picks the source of each datagram), at
//       `rate` a second; after `legit-after` seconds a client with the token connects (and later leaves).
//       Reports whether it connected and with how many handshake datagrams (2: on the first try).
//   polytope-abuse overrun --server 127.0.0.1:PORT --admin-key KEY [--room NAME] [--junk-rate 200]
//                          [--admin-interval 0.5] [--seconds 12]
//       junk datagrams at `junk-rate` a second and an admin Status every `admin-interval`, to a server whose
//       room overruns; reports the junk sent and each admin round trip.
// Output: one JSON object on stdout.
#include "polytope/client/admin.h"
#include "polytope/client/token_file.h"
#include "polytope/client/udp_client.h"
#include "polytope/protocol/admin_auth.h"
#include "polytope/protocol/packet.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <iostream>
#include <random>
#include <thread>
#include <vector>

using namespace polytope;

namespace
{

double secondsSince(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool parseServer(const std::string& text, sockaddr_in& out, std::string& error)
{
    const std::size_t colon = text.rfind(':');
    out = {};
    out.sin_family = AF_INET;
    if (colon == std::string::npos || inet_pton(AF_INET, text.substr(0, colon).c_str(), &out.sin_addr) != 1)
    {
        error = "--server takes IPv4:PORT, got '" + text + "'";
        return false;
    }
    const unsigned long port = std::strtoul(text.c_str() + colon + 1, nullptr, 10);
    if (port == 0 || port > 65535 || (ntohl(out.sin_addr.s_addr) >> 24) != 127)
    {
        error = "--server must be a loopback address (127.x.y.z) with a port 1..65535";
        return false;
    }
    out.sin_port = htons(static_cast<std::uint16_t>(port));
    return true;
}

/// Calls `send(n)` for n = 0, 1, 2, ... at `rate` a second while `running`, sleeping at most
/// `maxSleepSeconds` at a time between calls.
template <typename Send>
void sendPaced(double rate, double maxSleepSeconds, const std::atomic<bool>& running, Send&& send)
{
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t n = 0;
    while (running.load())
    {
        const double due = static_cast<double>(n) / rate;
        const double now = secondsSince(start);
        if (now < due)
        {
            std::this_thread::sleep_for(std::chrono::duration<double>(std::min(due - now, maxSleepSeconds)));
            continue;
        }
        send(n);
        ++n;
    }
}

/// The server under test (a loopback address) and a UDP socket to send to it from, closed at the end.
struct Target
{
    Target() = default;
    ~Target()
    {
        if (fd >= 0)
        {
            ::close(fd);
        }
    }
    Target(const Target&) = delete;
    Target& operator=(const Target&) = delete;

    sockaddr_in server{};
    int fd = -1;
};

/// Parses --server's `text` into `target` and opens its socket; says why on stderr and returns false when
/// either fails.
bool openTarget(const std::string& text, Target& target)
{
    std::string error;
    if (!parseServer(text, target.server, error))
    {
        std::cerr << "polytope-abuse: " << error << "\n";
        return false;
    }
    target.fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    if (target.fd < 0)
    {
        std::cerr << "polytope-abuse: no socket: " << std::strerror(errno) << "\n";
        return false;
    }
    return true;
}

/// Sends one datagram to `to` from the loopback address `source` (IP_PKTINFO).
bool sendFrom(int fd, const sockaddr_in& to, std::uint32_t source, std::span<const std::uint8_t> bytes)
{
    iovec vector{const_cast<std::uint8_t*>(bytes.data()), bytes.size()};
    alignas(cmsghdr) std::uint8_t control[CMSG_SPACE(sizeof(in_pktinfo))] = {};
    msghdr message{};
    message.msg_name = const_cast<sockaddr_in*>(&to);
    message.msg_namelen = sizeof(to);
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = IPPROTO_IP;
    c->cmsg_type = IP_PKTINFO;
    c->cmsg_len = CMSG_LEN(sizeof(in_pktinfo));
    in_pktinfo info{};
    info.ipi_spec_dst.s_addr = htonl(source);
    std::memcpy(CMSG_DATA(c), &info, sizeof(info));
    return ::sendmsg(fd, &message, MSG_DONTWAIT) == static_cast<ssize_t>(bytes.size());
}

/// An admin request with a random MAC: what a flood without the key looks like (320 bytes, padded).
std::vector<std::uint8_t> forgedAdminRequest(std::mt19937_64& random)
{
    protocol::AdminCommandFields command;
    command.op = protocol::wire::AdminOp::Status;
    command.nonce = random();
    command.time = 1.0;
    const std::vector<std::uint8_t> bytes = protocol::encodeAdminCommand(command);
    protocol::AdminMac mac{};
    for (auto& b : mac)
    {
        b = static_cast<std::uint8_t>(random());
    }
    protocol::PacketWriter writer;
    const auto datagram = writer.adminRequest({}, bytes, mac);
    return {datagram.begin(), datagram.end()};
}

int runSpoof(const std::string& serverText, const std::string& tokenFile, int addresses, double rate,
             double seconds, double legitAfter)
{
    Target target;
    if (!openTarget(serverText, target))
    {
        return 2;
    }
    const sockaddr_in& server = target.server;
    std::string error;
    client::ClientConfig config;
    config.name = "legitimate";
    config.token.emplace();
    if (!client::readConnectTokenFile(tokenFile, *config.token, error))
    {
        std::cerr << "polytope-abuse: " << error << "\n";
        return 2;
    }
    const int big = 4 * 1024 * 1024;
    ::setsockopt(target.fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));

    std::atomic<bool> flooding{true};
    std::atomic<std::uint64_t> sent{0}, failed{0};
    std::thread flood(
        [&]
        {
            std::mt19937_64 random(2026);
            std::vector<std::vector<std::uint8_t>> datagrams;
            for (int i = 0; i < 64; ++i)
            {
                datagrams.push_back(forgedAdminRequest(random));
            }
            sendPaced(rate, 0.002, flooding,
                      [&](std::uint64_t n)
                      {
                          // 127.16.0.0 + k: never 127.0.0.1, where the server and the legitimate client live.
                          const std::uint32_t source =
                              ((127u << 24) | (16u << 16)) + static_cast<std::uint32_t>(random() % addresses);
                          const bool ok =
                              sendFrom(target.fd, server, source, datagrams[n % datagrams.size()]);
                          (ok ? sent : failed).fetch_add(1);
                      });
        });

    std::this_thread::sleep_for(std::chrono::duration<double>(legitAfter));
    client::UdpClient legit(config);
    nlohmann::ordered_json out;
    const char* host = inet_ntoa(server.sin_addr);
    if (!legit.connect(host, ntohs(server.sin_port), error))
    {
        std::cerr << "polytope-abuse: " << error << "\n";
        flooding = false;
        flood.join();
        return 2;
    }
    const double connectStart = legit.now();
    double connectedAfter = -1.0;
    std::uint64_t handshakeDatagrams = 0;
    while (legit.now() - connectStart < seconds - legitAfter && !legit.client().isFinished())
    {
        legit.poll(0.01);
        if (legit.client().isConnected() && connectedAfter < 0.0)
        {
            connectedAfter = legit.now() - connectStart;
            handshakeDatagrams = legit.client().stats().datagramsSent;
        }
    }
    if (connectedAfter < 0.0)
    {
        handshakeDatagrams = legit.client().stats().datagramsSent;
    }
    legit.disconnect();
    flooding = false;
    flood.join();
    out["scenario"] = "spoof";
    out["spoofed_addresses"] = addresses;
    out["flood_rate_per_s"] = rate;
    out["flood_sent"] = sent.load();
    out["flood_send_failures"] = failed.load();
    out["legit_connected"] = connectedAfter >= 0.0;
    out["legit_connect_ms"] = connectedAfter >= 0.0 ? connectedAfter * 1000.0 : -1.0;
    out["legit_handshake_datagrams"] = handshakeDatagrams;
    // A ConnectRequest and a ChallengeResponse make one try; the client resends each every 0.1 s.
    out["legit_tries"] = (handshakeDatagrams + 1) / 2;
    std::cout << out.dump() << "\n";
    return connectedAfter >= 0.0 ? 0 : 1;
}

int runOverrun(const std::string& serverText, const std::string& adminKey, const std::string& room,
               double junkRate, double adminInterval, double seconds)
{
    Target target;
    if (!openTarget(serverText, target))
    {
        return 2;
    }
    const sockaddr_in& server = target.server;
    std::string error;
    std::atomic<bool> running{true};
    std::atomic<std::uint64_t> junkSent{0};
    std::thread junk(
        [&]
        {
            const std::vector<std::uint8_t> bytes(200, 0x5A);
            const auto* to = reinterpret_cast<const sockaddr*>(&server);
            sendPaced(junkRate, 0.005, running,
                      [&](std::uint64_t)
                      {
                          if (::sendto(target.fd, bytes.data(), bytes.size(), 0, to, sizeof(server)) ==
                              static_cast<ssize_t>(bytes.size()))
                          {
                              junkSent.fetch_add(1);
                          }
                      });
        });
    std::vector<double> roundTrips;
    std::uint64_t adminSent = 0, adminAnswered = 0;
    const auto start = std::chrono::steady_clock::now();
    const char* host = inet_ntoa(server.sin_addr);
    while (secondsSince(start) < seconds)
    {
        const auto sentAt = std::chrono::steady_clock::now();
        protocol::AdminCommandFields command;
        command.op = protocol::wire::AdminOp::Status;
        command.room = room;
        client::AdminOutcome outcome;
        ++adminSent;
        if (client::sendAdminCommand(host, ntohs(server.sin_port), command, adminKey, 5.0, outcome, error) &&
            outcome.replied)
        {
            ++adminAnswered;
            roundTrips.push_back(secondsSince(sentAt));
        }
        const double next = adminInterval - secondsSince(sentAt);
        if (next > 0.0)
        {
            std::this_thread::sleep_for(std::chrono::duration<double>(next));
        }
    }
    running = false;
    junk.join();
    std::sort(roundTrips.begin(), roundTrips.end());
    nlohmann::ordered_json out;
    out["scenario"] = "overrun";
    out["junk_sent"] = junkSent.load();
    out["admin_sent"] = adminSent;
    out["admin_answered"] = adminAnswered;
    out["admin_rtt_ms_median"] = roundTrips.empty() ? -1.0 : roundTrips[roundTrips.size() / 2] * 1000.0;
    out["admin_rtt_ms_max"] = roundTrips.empty() ? -1.0 : roundTrips.back() * 1000.0;
    std::cout << out.dump() << "\n";
    return adminAnswered == adminSent ? 0 : 1;
}

} // namespace

int main(int argc, char** argv)
{
    CLI::App app{
        "polytope-abuse: floods a local polytope-server and measures what clients get (bench/abuse.sh)"};
    app.require_subcommand(1);
    std::string serverText = "127.0.0.1:7777";
    std::string tokenFile, adminKey, room;
    int addresses = 20000;
    double rate = 7000.0, seconds = 6.0, legitAfter = 3.0, junkRate = 200.0, adminInterval = 0.5;
    CLI::App* spoof = app.add_subcommand("spoof", "spoofed admin flood while a token client connects");
    spoof->add_option("--server", serverText, "the server, 127.x.y.z:PORT")->required();
    spoof->add_option("--token", tokenFile, "the legitimate client's token file (polytope-token make)")
        ->required();
    spoof->add_option("--addresses", addresses, "spoofed source addresses")->check(CLI::Range(1, 1 << 20));
    spoof->add_option("--rate", rate, "flood datagrams per second")->check(CLI::Range(1.0, 200000.0));
    spoof->add_option("--seconds", seconds, "the whole run")->check(CLI::Range(1.0, 120.0));
    spoof->add_option("--legit-after", legitAfter, "seconds of flood before the client connects")
        ->check(CLI::Range(0.0, 60.0));
    CLI::App* overrun =
        app.add_subcommand("overrun", "junk and admin round trips against an overrunning room");
    overrun->add_option("--server", serverText, "the server, 127.x.y.z:PORT")->required();
    overrun->add_option("--admin-key", adminKey, "the server's admin key")->required();
    overrun->add_option("--room", room, "the room to ask about (empty: the first)");
    overrun->add_option("--junk-rate", junkRate, "junk datagrams per second")
        ->check(CLI::Range(1.0, 100000.0));
    overrun->add_option("--admin-interval", adminInterval, "seconds between admin Status commands")
        ->check(CLI::Range(0.05, 10.0));
    overrun->add_option("--seconds", seconds, "the whole run")->check(CLI::Range(1.0, 120.0));
    CLI11_PARSE(app, argc, argv);
    if (legitAfter >= seconds)
    {
        std::cerr << "polytope-abuse: --legit-after must be less than --seconds\n";
        return 2;
    }
    if (spoof->parsed())
    {
        return runSpoof(serverText, tokenFile, addresses, rate, seconds, legitAfter);
    }
    return runOverrun(serverText, adminKey, room, junkRate, adminInterval, seconds);
}
