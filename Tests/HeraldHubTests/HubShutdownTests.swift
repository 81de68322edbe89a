import Foundation
import HeraldCore
import HeraldHub
import HeraldSQLite
import Testing

/// Graceful shutdown in the middle of a broadcast: the page being sent is finished, the
/// notification is handed back with its cursor, and the next worker resumes it at once.
@Suite("Hub: delivery at shutdown")
struct HubShutdownTests {
    static let payload = PlatformPayload(platform: .apns, body: Data(#"{"aps":{"alert":"all"}}"#.utf8))

    @Test func anInterruptedBroadcastIsHandedBackAfterItsPageAndResumedAtOnceWithoutRepeats() async throws {
        try await HubFixture.with(platforms: [.apns], configure: { $0.pageSize = 10 }) { f in
            try await f.store.insertRegistrations((0..<35).map { Registration.apns($0) })
            let record = try await f.engine.enqueue(tagExpression: nil, payloads: [Self.payload])
            f.engine.interruptDelivery()
            await #expect(throws: CancellationError.self) { try await f.engine.deliverNext() }
            #expect(f.apns.sent.count == 10, "the page being sent is finished, and no other is started")
            let handedBack = try await f.stored(record.id)
            #expect(handedBack.state == .processing)
            #expect(handedBack.counts.total(.success) == 10)

            // The next worker (a new engine on the store, as after a restart) takes it over at
            // once: its lease ended when it was handed back.
            var configuration = f.engine.configuration
            configuration.pageSize = 10
            let next = HubEngine(store: f.store, providers: [f.apns], configuration: configuration, logger: hubTestLogger)
            #expect(try await next.deliverNext())
            let finished = try await f.stored(record.id)
            #expect(finished.state == .completed)
            #expect(finished.counts.total(.success) == 35)
            #expect(f.apns.sent.count == 35, "no device gets it twice")
            #expect(Set(f.apns.sent.map(\.handle)).count == 35)
        }
    }

    @Test func aShutdownInTheMiddleOfAReadHandsBackAfterThePageBeingSent() async throws {
        // Four pages of 10 are read at once: the shutdown comes during the second page.
        try await HubFixture.with(platforms: [.apns], configure: { $0.pageSize = 10 }) { f in
            let registrations = (0..<35).map { Registration.apns($0) }
            try await f.store.insertRegistrations(registrations)
            let record = try await f.engine.enqueue(tagExpression: nil, payloads: [Self.payload])
            let engine = f.engine
            f.apns.whenSent(15) { engine.interruptDelivery() }
            await #expect(throws: CancellationError.self) { try await f.engine.deliverNext() }
            #expect(f.apns.sent.count == 20, "the page being sent is finished, and the rest of the read is not sent")
            let handedBack = try await f.stored(record.id)
            #expect(handedBack.state == .processing)
            #expect(handedBack.counts.total(.success) == 20)
            #expect(handedBack.cursor == registrations.map(\.id).sorted()[19], "progress is saved after every page of a read")
        }
    }

    @Test func aNotificationOnItsLastPageIsFinishedNotHandedBack() async throws {
        try await HubFixture.with(platforms: [.apns], configure: { $0.pageSize = 10 }) { f in
            try await f.store.insertRegistrations((0..<7).map { Registration.apns($0) })
            let record = try await f.engine.enqueue(tagExpression: nil, payloads: [Self.payload])
            f.engine.interruptDelivery()
            #expect(try await f.engine.deliverNext())
            #expect(try await f.stored(record.id).state == .completed)
            #expect(f.apns.sent.count == 7)
        }
    }
}
