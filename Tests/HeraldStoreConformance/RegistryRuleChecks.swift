import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// The device registry's rules that depend on what is stored, each checked by the store in
/// the transaction of its write: a condition that fails changes nothing.
enum RegistryRuleChecks {
    static let handle = String(repeating: "ab", count: 32)

    static let all: [StoreCheck] = [
        check("anIDNeverIssuedIsGoneAndNothingIsWritten") { store, _ in
            let registration = Registration.sample(id: "never-issued", handle: RegistryRuleChecks.handle)
            await expectHeraldError(.gone) {
                _ = try await store.upsertRegistration(registration, when: RegistrationCondition(mustBeIssued: true))
            }
            let stored = try await store.registration(id: "never-issued")
            let count = try await store.registrationCount()
            #expect(stored == nil)
            #expect(count == 0)
        },

        check("anIssuedIDIsUsableUntilItsReservationExpires") { store, clock in
            try await store.reserveRegistrationID("fresh", owner: nil, ttl: .seconds(60))
            try await store.reserveRegistrationID("stale", owner: nil, ttl: .seconds(60))
            let saved = try await store.upsertRegistration(
                .sample(id: "fresh", handle: RegistryRuleChecks.handle), when: RegistrationCondition(mustBeIssued: true)
            )
            #expect(saved.version == 1)
            clock.advance(by: .seconds(61))
            // Once a registration, the id stays valid; the other reservation expired.
            #expect(try await store.upsertRegistration(saved, when: RegistrationCondition(mustBeIssued: true)).version == 2)
            await expectHeraldError(.gone) {
                _ = try await store.upsertRegistration(.sample(id: "stale"), when: RegistrationCondition(mustBeIssued: true))
            }
        },

        check("anUpdateOfAMissingRegistrationFailsAndKeepsItsReservation") { store, _ in
            try await store.reserveRegistrationID("reserved", owner: nil, ttl: .seconds(60))
            await expectHeraldError(.notFound) {
                _ = try await store.upsertRegistration(.sample(id: "reserved"), when: RegistrationCondition(mustExist: true, mustBeIssued: true))
            }
            await expectCodedError(.versionMismatch, of: StoreError.self) {
                _ = try await store.upsertRegistration(.sample(id: "reserved"), when: RegistrationCondition(ifVersion: 1))
            }
            #expect(try await store.registration(id: "reserved") == nil)
            #expect(try await store.isRegistrationIDValid("reserved"), "a failed condition keeps the reservation")
        },

        check("anotherOwnersRegistrationIsForbiddenAndKept") { store, _ in
            let alice = try await store.upsertRegistration(
                .sample(id: "r1", handle: RegistryRuleChecks.handle, tags: ["username:alice"], owner: "alice"), ifVersion: nil)
            var mallory = alice
            mallory.owner = "mallory"
            mallory.tags = ["username:mallory"]
            await expectHeraldError(.forbidden) {
                _ = try await store.upsertRegistration(mallory, when: RegistrationCondition(mustBeIssued: true, owner: "mallory"))
            }
            await expectHeraldError(.forbidden) {
                _ = try await store.deleteRegistration(id: "r1", ifVersion: nil, owner: "mallory")
            }
            #expect(try await store.registration(id: "r1") == alice)
            #expect(try await store.deleteRegistration(id: "r1", ifVersion: nil, owner: "alice"))
            #expect(try await !store.deleteRegistration(id: "r1", ifVersion: nil, owner: "alice"))
        },

        check("concurrentConditionalSavesEachMeetTheirOwnRule") { store, _ in
            // Many saves at once, as a busy app backend makes them: a store may apply them
            // together, but each answers for its own condition, and a failed one writes nothing.
            let count = 60
            for index in 0..<count where index % 3 != 2 {
                try await store.reserveRegistrationID("issued-\(index)", owner: "user-\(index)", ttl: .seconds(60))
            }
            for index in 0..<count where index % 3 == 1 {
                // Ten of these belong to someone else already.
                _ = try await store.upsertRegistration(
                    .sample(id: "issued-\(index)", handle: "old-\(index)", owner: index % 6 == 1 ? "someone-else" : "user-\(index)"),
                    ifVersion: nil
                )
            }
            // A device (one handle) that the first ten registrations share, owned by a stranger.
            _ = try await store.upsertRegistration(.sample(id: "stale-device", handle: "device-0", owner: "stranger"), ifVersion: nil)
            let outcomes = await withTaskGroup(of: (Int, Result<Registration, HeraldError>).self) { group in
                for index in 0..<count {
                    group.addTask {
                        let registration = Registration.sample(
                            id: index % 3 == 2 ? "never-\(index)" : "issued-\(index)", handle: "device-\(index % 10 == 0 ? 0 : index)",
                            owner: "user-\(index)"
                        )
                        let condition = RegistrationCondition(
                            mustBeIssued: true, owner: "user-\(index)", replacesOtherRegistrationsOfHandle: true
                        )
                        do {
                            return (index, .success(try await store.upsertRegistration(registration, when: condition)))
                        } catch let error as HeraldError {
                            return (index, .failure(error))
                        } catch {
                            return (index, .failure(HeraldError(code: .internalError, message: "\(error)")))
                        }
                    }
                }
                var outcomes: [Int: Result<Registration, HeraldError>] = [:]
                for await (index, outcome) in group { outcomes[index] = outcome }
                return outcomes
            }
            for index in 0..<count {
                let outcome = try #require(outcomes[index])
                switch (index % 3, index % 6) {
                case (2, _):
                    await expectHeraldError(.gone) { _ = try outcome.get() }
                    #expect(try await store.registration(id: "never-\(index)") == nil)
                case (1, 1):
                    await expectHeraldError(.forbidden) { _ = try outcome.get() }
                    #expect(try await store.registration(id: "issued-\(index)")?.owner == "someone-else")
                case (1, _):
                    #expect(try outcome.get().version == 2, "an update of the user's own registration")
                default:
                    #expect(try outcome.get().version == 1, "a new registration of an issued id")
                }
            }
            // The shared device kept one registration: the stranger's went, and of the saves
            // that named it, the one that ran last.
            let onDevice = try await store.registrations(handle: "device-0", platform: .apns)
            #expect(onDevice.count == 1)
            #expect(onDevice.first?.id.hasPrefix("issued-") == true)
            #expect(try await store.registration(id: "stale-device") == nil)
        },

        check("oneDeviceOneRegistration") { store, _ in
            _ = try await store.upsertRegistration(.sample(id: "alice-phone", handle: RegistryRuleChecks.handle, owner: "alice"), ifVersion: nil)
            _ = try await store.upsertRegistration(
                .sample(id: "other-platform", platform: .fcm, handle: RegistryRuleChecks.handle, owner: "alice"), ifVersion: nil)
            try await store.reserveRegistrationID("bob-phone", owner: "bob", ttl: .seconds(60))
            let bob = try await store.upsertRegistration(
                .sample(id: "bob-phone", handle: RegistryRuleChecks.handle, owner: "bob"),
                when: RegistrationCondition(mustBeIssued: true, owner: "bob", replacesOtherRegistrationsOfHandle: true)
            )
            #expect(try await store.registrations(handle: RegistryRuleChecks.handle, platform: .apns) == [bob])
            #expect(try await store.registration(id: "other-platform") != nil, "another platform's registration is another device")
        },

        check("aDeviceGetsItsOwnersRegistrationAndLosesItsDuplicates") { store, clock in
            let first = try await store.upsertRegistration(.sample(id: "first", handle: RegistryRuleChecks.handle, owner: "alice"), ifVersion: nil)
            clock.advance(by: .seconds(1))
            _ = try await store.upsertRegistration(.sample(id: "second", handle: RegistryRuleChecks.handle, owner: "alice"), ifVersion: nil)
            _ = try await store.upsertRegistration(.sample(id: "bobs", handle: RegistryRuleChecks.handle, owner: "bob"), ifVersion: nil)
            let id = try await store.registrationID(forHandles: [RegistryRuleChecks.handle], owner: "alice", orReserve: "new-id", ttl: .seconds(60))
            #expect(id == first.id)
            #expect(try await store.registration(id: "second") == nil, "the duplicate is deleted")
            #expect(try await store.registration(id: "bobs") != nil, "another user's registration is not the caller's to delete")
            #expect(try await !store.isRegistrationIDValid("new-id"))

            let carol = try await store.registrationID(
                forHandles: [RegistryRuleChecks.handle, "other"], owner: "carol", orReserve: "carol-id", ttl: .seconds(60))
            #expect(carol == "carol-id")
            #expect(try await store.isRegistrationIDValid("carol-id"))
        },

        check("conditionalAndPlainWritesArrivingTogetherKeepTheirOrder") { store, _ in
            try await store.reserveRegistrationID("issued", owner: nil, ttl: .seconds(60))
            let results = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        let id = index.isMultiple(of: 2) ? "plain-\(index)" : (index == 1 ? "issued" : "unknown-\(index)")
                        let condition = index.isMultiple(of: 2) ? RegistrationCondition.none : RegistrationCondition(mustBeIssued: true)
                        return (try? await store.upsertRegistration(.sample(id: id), when: condition)) != nil
                    }
                }
                var succeeded = 0
                for await ok in group where ok { succeeded += 1 }
                return succeeded
            }
            #expect(results == 21, "20 plain writes and the one issued id")
            #expect(try await store.registrationCount() == 21)
        },
    ]

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "registry rules", name: name, body: body)
    }
}
