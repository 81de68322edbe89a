import Foundation
import HeraldCore
import HeraldHub
import HeraldMetrics
import HeraldSQLite
import Testing

/// Large notifications split into partitions that the workers of several engines (nodes on
/// one store) deliver in parallel, each device once.
@Suite("Hub: partitioned broadcasts")
struct HubPartitionTests {
    static let payload = PlatformPayload(platform: .apns, body: Data(#"{"aps":{"alert":"all"}}"#.utf8))

    static func small(_ configuration: inout HubEngine.Configuration) {
        configuration.pageSize = 10
        configuration.partitionSize = 30
    }

    @Test func aBroadcastIsSplitAndTheOtherNodeDeliversThePartitions() async throws {
        try await HubFixture.with(platforms: [.apns], configure: Self.small) { f in
            try await f.store.insertRegistrations((0..<200).map { Registration.apns($0) })
            let record = try await f.engine.enqueue(tagExpression: nil, payloads: [Self.payload])

            // The first worker claims it, splits it into runs of 30 registrations, and keeps the
            // first run.
            #expect(try await f.engine.deliverNext())
            #expect(f.apns.sent.count == 30)
            #expect(try await f.stored(record.id).state == .processing)

            let otherProvider = RecordingProvider(.apns)
            let otherNode = HubEngine(store: f.store, providers: [otherProvider], configuration: f.engine.configuration, logger: hubTestLogger)
            var claimed = 0
            while try await otherNode.deliverNext() { claimed += 1 }
            #expect(claimed == 6, "six more partitions: five runs of 30 and the last 20")
            #expect(otherProvider.sent.count == 170)

            let handles = f.apns.sent.map(\.handle) + otherProvider.sent.map(\.handle)
            #expect(handles.count == 200 && Set(handles).count == 200, "every device once")
            let finished = try await f.stored(record.id)
            #expect(finished.state == .completed)
            #expect(finished.counts.total(.success) == 200)
        }
    }

    /// Two nodes recording to one registry: the deliveries of every partition add up to one
    /// per device, whichever node sent them, and the expired channels to those removed.
    @Test func theMetricsOfAPartitionedBroadcastCountEachDeviceOnce() async throws {
        try await HubFixture.with(platforms: [.apns], configure: Self.small) { f in
            try await f.store.insertRegistrations((0..<100).map { Registration.apns($0) })
            let metrics = HeraldMetrics()
            let nodes = [RecordingProvider(.apns), RecordingProvider(.apns)].map { provider in
                for n in stride(from: 0, to: 100, by: 10) { provider.expire(Registration.apns(n).handle) }
                return HubEngine(
                    store: f.store, providers: [provider], configuration: f.engine.configuration,
                    metrics: metrics.hub("partitioned"), logger: hubTestLogger
                )
            }
            let record = try await nodes[0].enqueue(tagExpression: nil, payloads: [Self.payload])
            #expect(try await nodes[0].deliverNext())
            while try await nodes[1].deliverNext() {}
            #expect(try await f.stored(record.id).state == .completed)

            let page = String(decoding: metrics.emit(), as: UTF8.self)
            #expect(page.contains(#"herald_notifications_accepted_total{hub="partitioned"} 1"#), "\(page)")
            #expect(page.contains(#"herald_deliveries_total{hub="partitioned",platform="apns",outcome="Success"} 90"#), "\(page)")
            #expect(page.contains(#"herald_deliveries_total{hub="partitioned",platform="apns",outcome="ExpiredChannel"} 10"#), "\(page)")
            #expect(page.contains(#"herald_channels_expired_total{hub="partitioned",platform="apns"} 10"#), "\(page)")
            #expect(try await f.store.registrationCount() == 90)
        }
    }

    @Test func twoNodesDeliveringAtOnceReachEveryDeviceOnce() async throws {
        try await HubFixture.with(platforms: [.apns], configure: Self.small) { f in
            try await f.store.insertRegistrations((0..<1_000).map { Registration.apns($0, tags: $0 % 2 == 0 ? ["even"] : []) })
            let broadcast = try await f.engine.enqueue(tagExpression: nil, payloads: [Self.payload])
            let tagged = try await f.engine.enqueue(tagExpression: "even", payloads: [Self.payload])
            let otherProvider = RecordingProvider(.apns)
            let otherNode = HubEngine(store: f.store, providers: [otherProvider], configuration: f.engine.configuration, logger: hubTestLogger)

            // Two lanes on each node, claiming until both notifications have ended (a lane that
            // finds nothing looks again: partitions appear when a notification is split).
            let ids = [broadcast.id, tagged.id]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for node in [f.engine, f.engine, otherNode, otherNode] {
                    group.addTask {
                        while true {
                            if try await node.deliverNext() { continue }
                            var ended = true
                            for id in ids { ended = try await node.notification(id: id)?.state.isFinal == true && ended }
                            if ended { return }
                            try await Task.sleep(for: .milliseconds(2))
                        }
                    }
                }
                try await group.waitForAll()
            }
            let handles = f.apns.sent.map(\.handle) + otherProvider.sent.map(\.handle)
            #expect(handles.count == 1_500)
            #expect(Dictionary(grouping: handles, by: { $0 }).values.map(\.count).sorted() == Array(repeating: 1, count: 500) + Array(repeating: 2, count: 500))
            #expect(!otherProvider.sent.isEmpty && !f.apns.sent.isEmpty, "both nodes took part")
            #expect(try await f.stored(broadcast.id).counts.total(.success) == 1_000)
            #expect(try await f.stored(tagged.id).counts.total(.success) == 500)
            #expect(try await f.stored(tagged.id).state == .completed)
        }
    }

    @Test func aSmallOrTaggedSendIsNotSplit() async throws {
        try await HubFixture.with(platforms: [.apns], configure: Self.small) { f in
            try await f.store.insertRegistrations((0..<200).map { Registration.apns($0, tags: $0 < 8 ? ["few"] : []) })
            let record = try await f.engine.enqueue(tagExpression: "few", payloads: [Self.payload])
            #expect(try await f.deliverAll() == 1, "one claim: the first page was not full")
            #expect(f.apns.sent.count == 8)
            #expect(try await f.stored(record.id).state == .completed)
        }
    }

    @Test func withoutPartitionsOneWorkerDeliversAll() async throws {
        try await HubFixture.with(
            platforms: [.apns],
            configure: {
                $0.pageSize = 10
                $0.partitionSize = 0
            }
        ) { f in
            try await f.store.insertRegistrations((0..<100).map { Registration.apns($0) })
            let record = try await f.engine.enqueue(tagExpression: nil, payloads: [Self.payload])
            #expect(try await f.deliverAll() == 1)
            #expect(f.apns.sent.count == 100)
            #expect(try await f.stored(record.id).state == .completed)
        }
    }
}
