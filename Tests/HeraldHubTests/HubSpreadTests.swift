import Foundation
import HeraldCore
import HeraldHub
import HeraldSQLite
import Testing

/// Notifications spread over a time: their devices get them evenly over it, not at once.
@Suite("Hub: notifications spread over a time")
struct HubSpreadTests {
    static let payload = PlatformPayload(platform: .apns, body: Data(#"{"aps":{"alert":"spread"}}"#.utf8))

    static func spread(_ seconds: Int, tags: String? = nil) throws -> SendRequest {
        SendRequest(
            target: .tags(try HubEngine.tags(tags)), content: .native([payload]), options: .init(spread: .seconds(seconds)))
    }

    /// How many sends the APNs provider had got at each of `offsets` after delivery began, and
    /// how long `deliver` took.
    static func sampled(
        _ f: HubFixture, at offsets: [Duration], while deliver: @escaping @Sendable () async throws -> Void
    ) async throws
        -> (samples: [Int], elapsed: Duration)
    {
        let start = ContinuousClock.now
        let delivering = Task { try await deliver() }
        var samples: [Int] = []
        for offset in offsets {
            try await Task.sleep(until: start + offset)
            samples.append(f.apns.sent.count)
        }
        try await delivering.value
        return (samples, ContinuousClock.now - start)
    }

    @Test func theDevicesItTargetsGetItEvenlyOverTheSpread() async throws {
        // Small pages (a page is read and booked at a time) and partitions that would split a
        // notification this size if it were not spread.
        try await HubFixture.with(
            platforms: [.apns],
            configure: {
                $0.pageSize = 8
                $0.partitionSize = 10
            }
        ) { f in
            // 30 of the 60 registrations match the tag: the pace is theirs, not the hub's.
            try await f.store.insertRegistrations((0..<60).map { Registration.apns($0, tags: $0 % 2 == 0 ? ["news"] : []) })
            let record = try await f.engine.send(try Self.spread(3, tags: "news")).record
            #expect(record.spread == .seconds(3))
            let engine = f.engine
            let (samples, elapsed) = try await Self.sampled(f, at: [.milliseconds(1500)]) { _ = try await engine.deliverNext() }
            // 30 over 3 s: 10 a second, one every 0.1 s; the last is due at 2.9 s.
            #expect(elapsed >= .milliseconds(2700), "30 devices spread over 3 s took \(elapsed)")
            #expect(elapsed < .seconds(6))
            #expect((10...20).contains(samples[0]), "about half of them by half of the spread, not \(samples[0])")
            let stored = try await f.stored(record.id)
            #expect(stored.state == .completed)
            #expect(stored.counts.total(.success) == 30)
            // One worker's one claim reached all 30: a split would have left it the first 10.
            #expect(Set(f.apns.sent.map(\.handle)).count == 30 && f.apns.sent.count == 30, "a spread notification is not split")
            #expect(try await !f.engine.deliverNext(), "no partition is left to claim")
        }
    }

    @Test func aShutdownHandsTheRestBackAndTheNextWorkerKeepsThePace() async throws {
        try await HubFixture.with(platforms: [.apns]) { f in
            try await f.store.insertRegistrations((0..<20).map { Registration.apns($0) })
            let record = try await f.engine.send(try Self.spread(4)).record
            let engine = f.engine
            let delivering = Task { try await engine.deliverNext() }
            try await Task.sleep(for: .milliseconds(1100))
            engine.interruptDelivery()
            _ = await delivering.result
            let sentBefore = f.apns.sent.count
            #expect((3...10).contains(sentBefore), "five a second: about 6 by the shutdown, not \(sentBefore)")
            let handedBack = try await f.stored(record.id)
            #expect(handedBack.state == .processing, "handed back, not finished")
            #expect(handedBack.counts.total(.success) == sentBefore, "what was sent is booked")

            // The next worker goes on from where the pace is now (its start is the delivery's
            // first start), not from the beginning of a new spread.
            let next = HubEngine(store: f.store, providers: [f.apns], configuration: f.engine.configuration, logger: hubTestLogger)
            let resumed = ContinuousClock.now
            #expect(try await next.deliverNext())
            let took = ContinuousClock.now - resumed
            #expect(took < .milliseconds(3500), "the rest of a 4 s spread, begun 1.1 s before, took \(took)")
            #expect(took >= .milliseconds(1800))
            let finished = try await f.stored(record.id)
            #expect(finished.state == .completed)
            #expect(finished.counts.total(.success) == 20)
            #expect(f.apns.sent.count == 20 && Set(f.apns.sent.map(\.handle)).count == 20, "no device sent twice")
        }
    }

    /// A direct send is paced by its own devices (no registration is counted).
    @Test func aDirectSendIsSpreadOverItsDevices() async throws {
        try await HubFixture.with(platforms: [.apns]) { f in
            let targets = (0..<10).map { DirectTarget(platform: .apns, handle: apnsToken($0)) }
            let request = SendRequest(target: .devices(targets), content: .native([Self.payload]), options: .init(spread: .seconds(2)))
            let record = try await f.engine.send(request).record
            let engine = f.engine
            let (samples, elapsed) = try await Self.sampled(f, at: [.milliseconds(1000)]) { _ = try await engine.deliverNext() }
            // 10 over 2 s: one every 0.2 s, the last due at 1.8 s.
            #expect(elapsed >= .milliseconds(1600), "10 devices spread over 2 s took \(elapsed)")
            #expect((3...8).contains(samples[0]), "about half of them by half of the spread, not \(samples[0])")
            #expect(try await f.stored(record.id).counts.total(.success) == 10)
        }
    }

    @Test func aSpreadIsWholeSecondsShorterThanTheTimeANotificationIsAbandonedAfter() async throws {
        try await HubFixture.with(platforms: [.apns], configure: { $0.abandonAfter = .seconds(600) }) { f in
            try await f.store.insertRegistrations([Registration.apns(1)])
            for spread: Duration in [.zero, .milliseconds(1500), .seconds(600), .seconds(-3)] {
                let request = SendRequest(target: .tags(nil), content: .native([Self.payload]), options: .init(spread: spread))
                let error = await #expect(throws: HeraldError.self) { try await f.engine.send(request) }
                #expect(error?.code == .badRequest)
                #expect(error?.message.contains("spread over 1 second to less than 600 seconds") == true, "\(String(describing: error))")
            }
            let test = SendRequest(target: .test(nil, limit: 1), content: .native([Self.payload]), options: .init(spread: .seconds(5)))
            let error = await #expect(throws: HeraldError.self) { try await f.engine.send(test) }
            #expect(error?.message.contains("cannot be spread") == true)
            #expect(try await f.engine.send(try Self.spread(599)).record.spread == .seconds(599))
            #expect(f.apns.sent.isEmpty, "nothing was sent for the refused ones")
        }
    }
}
