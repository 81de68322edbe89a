import Foundation
import HeraldCore
import HeraldStore
import HeraldStoreConformance
import HeraldTestSupport
import Synchronization
import Testing

@testable import HeraldPostgres

/// Registration and installation writes that arrive together are applied together: each
/// caller still gets its own outcome, and a write that fails by itself fails alone.
@Suite("PostgreSQL grouped writes", .enabled(if: PostgresTestDatabase.isConfigured, PostgresTestDatabase.skipReason))
struct PostgresGroupedWritesTests {
    /// A handle PostgreSQL refuses to store (text cannot hold a NUL character).
    static let refusedHandle = "bad\u{0}handle"

    @Test func concurrentUpsertsOfOneOwnerAllLand() async throws {
        try await PostgresTestDatabase.with { database async throws in
            let store = database.store(hub: PostgresTestDatabase.uniqueHubName())
            let ids = (0..<64).map { "issued-\($0)" }
            for id in ids { try await store.reserveRegistrationID(id, owner: "alice", ttl: .seconds(60)) }
            let condition = RegistrationCondition(mustBeIssued: true, owner: "alice", replacesOtherRegistrationsOfHandle: true)
            let saved = try await withThrowingTaskGroup(of: Registration.self) { group in
                for (index, id) in ids.enumerated() {
                    group.addTask {
                        try await store.upsertRegistration(
                            .sample(id: id, handle: String(format: "%064x", index), tags: ["username:alice"], owner: "alice"), when: condition
                        )
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(saved.count == ids.count)
            #expect(saved.allSatisfy { $0.version == 1 })
            #expect(try await store.registrationCount() == ids.count)
            // And once more, each an update of the user's own registration.
            let updated = try await withThrowingTaskGroup(of: Int.self) { group in
                for (index, id) in ids.enumerated() {
                    group.addTask {
                        try await store.upsertRegistration(
                            .sample(id: id, handle: String(format: "%064x", index), tags: ["username:alice", "n\(index)"], owner: "alice"),
                            when: condition
                        ).version
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(updated.allSatisfy { $0 == 2 })
            #expect(try await store.registration(id: "issued-7")?.tags == ["n7", "username:alice"])
        }
    }

    @Test func concurrentRegistrationIDRequestsOfOneOwnerDoNotWaitForEachOther() async throws {
        try await PostgresTestDatabase.with { database async throws in
            let store = database.store(hub: PostgresTestDatabase.uniqueHubName())
            // A device with two registrations of its owner: every request for it gets the older.
            let older = try await store.upsertRegistration(.sample(id: "a-older", handle: "device-0", owner: "alice"), ifVersion: nil)
            _ = try await store.upsertRegistration(.sample(id: "b-newer", handle: "device-0", owner: "alice"), ifVersion: nil)
            let answers = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for index in 0..<40 {
                    group.addTask {
                        let id = try await store.registrationID(
                            forHandles: ["device-\(index % 4)"], owner: "alice", orReserve: "new-\(index)", ttl: .seconds(60)
                        )
                        return (index, id)
                    }
                }
                return try await group.reduce(into: [Int: String]()) { $0[$1.0] = $1.1 }
            }
            for index in 0..<40 {
                #expect(answers[index] == (index % 4 == 0 ? older.id : "new-\(index)"))
            }
            #expect(try await store.registration(id: "b-newer") == nil, "the duplicate is deleted")
            #expect(try await store.isRegistrationIDValid("new-1"))
        }
    }

    @Test func aRefusedRegistrationInAGroupFailsOnlyItsCaller() async throws {
        try await PostgresTestDatabase.with { database async throws in
            let store = database.store(hub: PostgresTestDatabase.uniqueHubName())
            let outcomes = await withTaskGroup(of: (Int, Bool).self) { group in
                for index in 0..<48 {
                    group.addTask {
                        let handle = index == 17 ? Self.refusedHandle : String(format: "%064x", index)
                        do {
                            _ = try await store.upsertRegistration(.sample(id: "r\(index)", handle: handle), ifVersion: nil)
                            return (index, true)
                        } catch {
                            return (index, false)
                        }
                    }
                }
                return await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
            }
            for index in 0..<48 {
                #expect(outcomes[index] == (index != 17), "r\(index)")
            }
            #expect(try await store.registrationCount() == 47)
            #expect(try await store.registration(id: "r17") == nil)
        }
    }

    @Test func aRefusedInstallationInAGroupFailsOnlyItsCaller() async throws {
        try await PostgresTestDatabase.with { database async throws in
            let store = database.store(hub: PostgresTestDatabase.uniqueHubName())
            let outcomes = await withTaskGroup(of: (Int, Bool).self) { group in
                for index in 0..<48 {
                    group.addTask {
                        let channel = index == 30 ? Self.refusedHandle : String(format: "%064x", index)
                        do {
                            _ = try await store.upsertInstallation(.sample(id: "inst-\(index)", pushChannel: channel), ifVersion: nil)
                            return (index, true)
                        } catch {
                            return (index, false)
                        }
                    }
                }
                return await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
            }
            for index in 0..<48 {
                #expect(outcomes[index] == (index != 30), "inst-\(index)")
            }
            #expect(try await store.installation(id: "inst-30") == nil)
            #expect(try await store.installation(id: "inst-31")?.version == 1)
            #expect(try await store.registrationCount() == 47)
        }
    }
}

@Suite("Group commit")
struct GroupCommitterTests {
    @Test func writesThatArriveTogetherAreAppliedTogether() async throws {
        let batches = Mutex<[Int]>([])
        let committer = GroupCommitter<Int, Int>(maximumBatches: 1, maximumBatchSize: 100)
        let apply: GroupCommitter<Int, Int>.Apply = { requests in
            batches.withLock { $0.append(requests.count) }
            try? await Task.sleep(for: .milliseconds(20))
            return requests.map { $0 % 5 == 0 ? .failure(HeraldError.badRequest("\($0)")) : .success($0 * 2) }
        }
        let outcomes = await withTaskGroup(of: (Int, Int?).self) { group in
            for request in 0..<50 {
                group.addTask { (request, try? await committer.submit(request, apply: apply)) }
            }
            return await group.reduce(into: [Int: Int?]()) { $0[$1.0] = $1.1 }
        }
        for request in 0..<50 {
            #expect((outcomes[request] ?? nil) == (request % 5 == 0 ? nil : request * 2))
        }
        let sizes = batches.withLock { $0 }
        #expect(sizes.reduce(0, +) == 50)
        #expect(sizes.count < 50, "requests that waited were applied together: \(sizes)")
    }
}
