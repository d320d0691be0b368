#include "support/codec_stream.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

namespace polytope::test
{
namespace
{

using protocol::CodecError;
using protocol::QuantizedBody;
using protocol::SnapshotFrame;

const protocol::Address kSender = protocol::Address::ipv4(10, 0, 0, 1, 4000);
const protocol::Address kReceiver = protocol::Address::ipv4(10, 0, 0, 2, 5000);
constexpr std::size_t kTickBytes = 8;  // the envelope, reduced to the tick
constexpr std::uint64_t kAckBits = 64; // ticks before the newest that an acknowledgement covers

/// A snapshot the sender made, kept while it may serve as a baseline.
struct SentSnapshot
{
    std::vector<QuantizedBody> bodies;
    std::vector<std::uint64_t> unchangedSince;
};

/// The slices of one tick received so far.
struct PartialTick
{
    std::vector<std::uint32_t> firstIds;
    std::uint64_t covered = 0; // ids covered by the slices, of 2^32
    std::vector<QuantizedBody> bodies;
};

/// The baseline and reference for `tick`: the newest acknowledged tick the sender still has, and the one
/// before it.
struct Baselines
{
    SnapshotFrame baselineFrame, referenceFrame;
    const SnapshotFrame* baseline = nullptr;
    const SnapshotFrame* reference = nullptr;
};

void chooseBaselines(const std::set<std::uint64_t>& acked,
                     const std::map<std::uint64_t, SentSnapshot>& history, std::uint64_t tick, Baselines& out)
{
    for (auto it = acked.rbegin(); it != acked.rend(); ++it)
    {
        const auto found = history.find(*it);
        if (found == history.end() || *it >= tick)
        {
            continue;
        }
        if (out.baseline == nullptr)
        {
            out.baselineFrame = SnapshotFrame(*it, found->second.bodies);
            out.baseline = &out.baselineFrame;
        }
        else
        {
            out.referenceFrame = SnapshotFrame(*it, found->second.bodies);
            out.reference = &out.referenceFrame;
            return;
        }
    }
}

/// The receiver's side: decodes slices against the complete ticks it has, reassembles ticks.
class Receiver
{
  public:
    explicit Receiver(const protocol::SnapshotCodecConfig& codec) : m_codec(codec), m_decoder(codec) {}

    /// Takes one datagram (tick, then payload); counts into `result`.
    void receive(std::span<const std::uint8_t> datagram, const std::map<std::uint64_t, SentSnapshot>& sent,
                 CodecStreamResult& result)
    {
        std::uint64_t sliceTick = 0;
        std::memcpy(&sliceTick, datagram.data(), kTickBytes);
        const auto payload = datagram.subspan(kTickBytes);
        const protocol::SliceHeaderResult header = protocol::readSliceHeader(m_codec, payload);
        if (!header.ok() || m_complete.count(sliceTick) != 0)
        {
            result.decodeErrors += header.ok() ? 0 : 1;
            return; // a duplicate of a tick already complete
        }
        SnapshotFrame b, r;
        const SnapshotFrame* bp = nullptr;
        const SnapshotFrame* rp = nullptr;
        if (header.header.hasBaseline)
        {
            const auto it = m_complete.find(sliceTick - header.header.baselineAge);
            if (it == m_complete.end())
            {
                ++result.decodeErrors;
                return;
            }
            b = SnapshotFrame(it->first, it->second);
            bp = &b;
        }
        if (header.header.hasReference)
        {
            const auto it =
                m_complete.find(sliceTick - header.header.baselineAge - header.header.referenceGap);
            if (it == m_complete.end())
            {
                ++result.decodeErrors;
                return;
            }
            r = SnapshotFrame(it->first, it->second);
            rp = &r;
        }
        if (m_decoder.decode(payload, sliceTick, bp, rp) != CodecError::None)
        {
            ++result.decodeErrors;
            return;
        }
        PartialTick& part = m_partials[sliceTick];
        const std::uint32_t firstId = m_decoder.header().firstId;
        if (std::find(part.firstIds.begin(), part.firstIds.end(), firstId) != part.firstIds.end())
        {
            return; // a duplicated slice
        }
        part.firstIds.push_back(firstId);
        part.covered += m_decoder.header().endId - firstId;
        part.bodies.insert(part.bodies.end(), m_decoder.bodies().begin(), m_decoder.bodies().end());
        if (part.covered == (1ull << 32))
        {
            std::sort(part.bodies.begin(), part.bodies.end(),
                      [](const QuantizedBody& x, const QuantizedBody& y) { return x.id < y.id; });
            const auto truth = sent.find(sliceTick);
            if (truth != sent.end() && truth->second.bodies != part.bodies)
            {
                ++result.mismatches;
            }
            m_complete[sliceTick] = std::move(part.bodies);
            m_partials.erase(sliceTick);
            ++result.ticksDecoded;
            m_newestComplete = m_anyComplete ? std::max(m_newestComplete, sliceTick) : sliceTick;
            m_anyComplete = true;
        }
    }

    /// Forgets complete ticks too old to be a baseline at `tick`, and partial ones too old to finish.
    void forget(std::uint64_t tick)
    {
        while (!m_complete.empty() && m_complete.begin()->first + m_codec.maxBaselineAgeTicks + 1 < tick)
        {
            m_complete.erase(m_complete.begin());
        }
        while (!m_partials.empty() && m_partials.begin()->first + kAckBits < tick)
        {
            m_partials.erase(m_partials.begin());
        }
    }

    /// The acknowledgement to send (newest complete tick, then the mask of the 64 before it), or false while
    /// no tick is complete.
    bool acknowledgement(std::uint8_t (&ack)[16]) const
    {
        if (!m_anyComplete)
        {
            return false;
        }
        std::uint64_t mask = 0;
        for (std::uint64_t i = 0; i < kAckBits; ++i)
        {
            mask |= m_complete.count(m_newestComplete - 1 - i) != 0 ? (1ull << i) : 0;
        }
        std::memcpy(ack, &m_newestComplete, 8);
        std::memcpy(ack + 8, &mask, 8);
        return true;
    }

  private:
    const protocol::SnapshotCodecConfig& m_codec;
    protocol::SnapshotDecoder m_decoder;
    std::map<std::uint64_t, std::vector<QuantizedBody>> m_complete;
    std::map<std::uint64_t, PartialTick> m_partials;
    std::uint64_t m_newestComplete = 0;
    bool m_anyComplete = false;
};

} // namespace

CodecStreamResult runCodecStream(const CodecStreamSettings& settings, const CodecStreamHooks& hooks)
{
    const protocol::SnapshotCodecConfig& codec = settings.codec;
    CodecStreamResult result;
    protocol::NetworkSimulator network(settings.network, settings.networkSeed);
    protocol::SnapshotEncoder encoder(codec);
    Receiver receiver(codec);
    std::map<std::uint64_t, SentSnapshot> history;
    std::set<std::uint64_t> acked;
    std::uint64_t lastSentTick = 0;
    bool sentAny = false;
    const auto read = [](const std::function<double()>& clock) { return clock ? clock() : 0.0; };

    const int ticks = static_cast<int>(settings.seconds * settings.tickRateHz);
    const double dt = 1.0 / settings.tickRateHz;
    std::vector<std::uint8_t> datagram;
    for (int t = 0; t < ticks; ++t)
    {
        const double now = t * dt;
        const std::uint64_t tick = settings.firstTick + static_cast<std::uint64_t>(t);
        SentSnapshot& stored = history[tick];
        stored.bodies = hooks.snapshot(tick);
        if (const auto before = history.find(tick - 1); before != history.end())
        {
            // Once per tick, for every client: how long each body has been unchanged.
            protocol::updateUnchangedSince(
                SnapshotFrame(tick - 1, before->second.bodies, before->second.unchangedSince),
                SnapshotFrame(tick, stored.bodies), stored.unchangedSince);
            if (hooks.consecutiveSnapshots)
            {
                hooks.consecutiveSnapshots(before->second.bodies, stored.bodies);
            }
        }
        else
        {
            stored.unchangedSince.assign(stored.bodies.size(), tick);
        }
        while (history.begin()->first + codec.maxBaselineAgeTicks < tick)
        {
            history.erase(history.begin());
        }

        // Sender: acknowledgements in, then encode against the newest acknowledged tick and send.
        for (const protocol::SimulatedDatagram& d : network.receive(kSender, now))
        {
            std::uint64_t newest = 0, mask = 0;
            std::memcpy(&newest, d.bytes.data(), 8);
            std::memcpy(&mask, d.bytes.data() + 8, 8);
            acked.insert(newest);
            for (std::uint64_t i = 0; i < kAckBits; ++i)
            {
                if ((mask >> i) & 1u)
                {
                    acked.insert(newest - 1 - i);
                }
            }
        }
        while (!acked.empty() && *acked.begin() + codec.maxBaselineAgeTicks <= tick)
        {
            acked.erase(acked.begin());
        }
        Baselines chosen;
        chooseBaselines(acked, history, tick, chosen);
        const SnapshotFrame current(tick, stored.bodies, stored.unchangedSince);
        const double cpuStart = read(hooks.cpuClock);
        const double wallStart = read(hooks.wallClock);
        const CodecError error = encoder.encode(current, chosen.baseline, chosen.reference);
        const double wallEnd = read(hooks.wallClock);
        const double cpuMiddle = read(hooks.cpuClock);
        const CodecError secondClientError = encoder.encode(current, chosen.baseline, chosen.reference);
        const double cpuEnd = read(hooks.cpuClock);
        if (hooks.wallClock)
        {
            result.encodeWallSeconds.push_back(wallEnd - wallStart);
        }
        result.encodeCpuSeconds += cpuMiddle - cpuStart;
        result.secondClientEncodeCpuSeconds += cpuEnd - cpuMiddle;
        result.secondClientDisagreements += secondClientError != error ? 1 : 0;
        if (error != CodecError::None)
        {
            result.encodeError = error;
            result.refusedTick = tick;
            return result;
        }
        if (chosen.baseline != nullptr)
        {
            const std::uint64_t age = tick - chosen.baseline->tick;
            result.baselineAgeSum += age;
            ++result.deltaSnapshots;
            result.maxBaselineAge = std::max<std::size_t>(result.maxBaselineAge, age);
        }
        else
        {
            ++result.fullSnapshots;
        }
        const bool skip = encoder.stats().identicalToBaseline && sentAny &&
                          tick - lastSentTick < static_cast<std::uint64_t>(settings.idleHeartbeatTicks);
        if (!skip)
        {
            lastSentTick = tick;
            sentAny = true;
            for (const protocol::EncodedSlice& slice : encoder.slices())
            {
                datagram.assign(kTickBytes, 0);
                std::memcpy(datagram.data(), &tick, kTickBytes);
                datagram.insert(datagram.end(), slice.payload.begin(), slice.payload.end());
                network.send(kSender, kReceiver, datagram, now);
                result.largestPayload = std::max(result.largestPayload, slice.payload.size());
                if (hooks.sentSlice)
                {
                    hooks.sentSlice(tick, slice.payload.size());
                }
            }
        }

        // Receiver: decode what arrived, reassemble, acknowledge.
        for (const protocol::SimulatedDatagram& d : network.receive(kReceiver, now))
        {
            receiver.receive(d.bytes, history, result);
        }
        receiver.forget(tick);
        std::uint8_t ack[16];
        if (receiver.acknowledgement(ack))
        {
            network.send(kReceiver, kSender, ack, now);
        }
    }
    return result;
}

} // namespace polytope::test
