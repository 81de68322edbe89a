import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// Registrations: writes, versions, reservations, lookups and deletes.
enum RegistrationChecks {
    static let all: [StoreCheck] = [
        check("upsertCreatesThenReplacesWithVersions") { store, clock in
            let input = Registration.sample(id: "reg-1", platform: .webpush, handle: "https://push.example/1", tags: ["b", "a", "b"], owner: "alice")
            let created = try await store.upsertRegistration(input, ifVersion: nil)
            #expect(created.version == 1)
            #expect(created.tags == ["a", "b"])
            #expect(created.createdAt == clock.now)
            #expect(created.updatedAt == clock.now)
            #expect(created.webPushKeys == input.webPushKeys)
            #expect(try await store.registration(id: "reg-1") == created)

            clock.advance(by: .seconds(10))
            var changed = created
            changed.tags = ["c"]
            changed.handle = "https://push.example/2"
            changed.owner = nil
            changed.createdAt = Date(timeIntervalSince1970: 0)  // ignored: the store keeps createdAt
            let updated = try await store.upsertRegistration(changed, ifVersion: nil)
            #expect(updated.version == 2)
            #expect(updated.createdAt == created.createdAt)
            #expect(updated.updatedAt == clock.now)
            #expect(updated.tags == ["c"])
            #expect(updated.owner == nil)
            #expect(try await store.registration(id: "reg-1") == updated)

            // The tag index follows the tags.
            #expect(try await store.registrations(matching: .tag("a"), platforms: nil, after: nil, limit: 10).isEmpty)
            #expect(try await store.registrations(matching: .tag("c"), platforms: nil, after: nil, limit: 10).map(\.id) == ["reg-1"])
            #expect(try await store.registrationCount() == 1)
            #expect(try await store.registration(id: "missing") == nil)
        },

        check("aHandlesKindIsKeptByEveryWrite") { store, _ in
            // What a handle addresses comes back from every way of writing a registration:
            // alone, under a condition, many at once, in bulk, and through an installation;
            // and a write without one makes it a device's again.
            func kind(_ id: String) async throws -> HandleKind? {
                let registration = try await store.registration(id: id)
                return registration?.handleKind
            }
            var update = Registration.sample(id: "update", handle: "aa01")
            update.handleKind = .liveActivity
            _ = try await store.upsertRegistration(update, ifVersion: nil)
            #expect(try await kind("update") == .liveActivity)
            var start = Registration.sample(id: "start", handle: "aa02", tags: ["fans"])
            start.handleKind = .pushToStart(activityType: "MatchAttributes")
            _ = try await store.upsertRegistration(start, when: RegistrationCondition(owner: "alice", replacesOtherRegistrationsOfHandle: true))
            #expect(try await kind("start") == .pushToStart(activityType: "MatchAttributes"))
            #expect(
                try await store.registrations(matching: .tag("fans"), platforms: [.apns], after: nil, limit: 10).first?.handleKind
                    == .pushToStart(activityType: "MatchAttributes"))
            _ = try await store.upsertRegistration(.sample(id: "phone", handle: "aa03", tags: ["fans"]), ifVersion: nil)
            for (kind, count) in [
                (HandleKind.device, 1), (.pushToStart(activityType: "MatchAttributes"), 1), (.pushToStart(activityType: "Other"), 0), (.liveActivity, 0),
            ] {
                #expect(try await store.countRegistrations(RegistrationQuery(expression: .tag("fans"), handleKind: kind)) == count, "\(kind)")
                #expect(
                    try await store.browseRegistrations(RegistrationQuery(expression: .tag("fans"), handleKind: kind), after: nil, limit: 10).count == count)
            }
            #expect(try await store.countRegistrations(RegistrationQuery(expression: .tag("fans"))) == 2)
            let grouped = try await withThrowingTaskGroup(of: Registration.self) { group in
                for i in 0..<20 {
                    group.addTask {
                        var r = Registration.sample(id: "g\(i)", handle: String(format: "bb%02d", i))
                        r.handleKind = i.isMultiple(of: 2) ? .liveActivity : .device
                        return try await store.upsertRegistration(r, ifVersion: nil)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(grouped.count == 20)
            for i in 0..<20 { #expect(try await kind("g\(i)") == (i.isMultiple(of: 2) ? .liveActivity : .device)) }
            var bulk = Registration.sample(id: "bulk", handle: "cc01")
            bulk.handleKind = .pushToStart(activityType: "Race.Attributes")
            try await store.insertRegistrations([bulk])
            #expect(try await kind("bulk") == .pushToStart(activityType: "Race.Attributes"))
            let installation = Installation(
                id: "ride", platform: .apns, pushChannel: String(repeating: "dd", count: 32),
                pushChannelKind: .pushToStart(activityType: "RideAttributes"), tags: ["riders"],
                templates: ["t": InstallationTemplate(body: #"{"aps":{"alert":"$(m)"}}"#)])
            let saved = try await store.upsertInstallation(installation, ifVersion: nil)
            #expect(saved.pushChannelKind == .pushToStart(activityType: "RideAttributes"))
            #expect(try await store.installation(id: "ride")?.pushChannelKind == .pushToStart(activityType: "RideAttributes"))
            let derived = try await store.registrations(matching: .tag("riders"), platforms: nil, after: nil, limit: 10)
            #expect(derived.count == 2)
            #expect(derived.allSatisfy { $0.handleKind == .pushToStart(activityType: "RideAttributes") })

            update.handleKind = .device
            let back = try await store.upsertRegistration(update, ifVersion: 1)
            #expect(back.handleKind == .device)
            #expect(try await kind("update") == .device)
        },

        check("registrationsAreCountedPerPlatform") { store, _ in
            #expect(try await store.registrationCountsByPlatform() == [:])
            _ = try await store.upsertRegistration(.sample(id: "a1", platform: .apns, handle: "aa01"), ifVersion: nil)
            _ = try await store.upsertRegistration(.sample(id: "a2", platform: .apns, handle: "aa02"), ifVersion: nil)
            _ = try await store.upsertRegistration(.sample(id: "f1", platform: .fcm, handle: "fcm-1"), ifVersion: nil)
            _ = try await store.upsertRegistration(.sample(id: "w1", platform: .webpush, handle: "https://push.example/1"), ifVersion: nil)
            #expect(try await store.registrationCountsByPlatform() == [.apns: 2, .fcm: 1, .webpush: 1])
            #expect(try await store.deleteRegistration(id: "f1", ifVersion: nil))
            #expect(try await store.registrationCountsByPlatform() == [.apns: 2, .webpush: 1])
        },

        check("datesRoundTripToTheMillisecond") { store, _ in
            let expiry = Date(timeIntervalSince1970: 1_800_000_000.4567)
            let saved = try await store.upsertRegistration(.sample(id: "r", expiresAt: expiry), ifVersion: nil)
            #expect(abs(saved.expiresAt!.timeIntervalSince(expiry)) < 0.001)
            #expect(try await store.registration(id: "r") == saved)
        },

        check("ifVersionMustMatch") { store, _ in
            // A missing registration never matches.
            await expectCodedError(.versionMismatch, of: StoreError.self) {
                _ = try await store.upsertRegistration(.sample(id: "r"), ifVersion: 1)
            }
            #expect(try await store.registration(id: "r") == nil)

            _ = try await store.upsertRegistration(.sample(id: "r", tags: ["x"]), ifVersion: nil)
            let second = try await store.upsertRegistration(.sample(id: "r", tags: ["y"]), ifVersion: 1)
            #expect(second.version == 2)
            await expectCodedError(.versionMismatch, of: StoreError.self) {
                _ = try await store.upsertRegistration(.sample(id: "r", tags: ["z"]), ifVersion: 1)
            }
            let stored = try #require(try await store.registration(id: "r"))
            #expect(stored.version == 2)
            #expect(stored.tags == ["y"])

            await expectCodedError(.versionMismatch, of: StoreError.self) {
                _ = try await store.deleteRegistration(id: "r", ifVersion: 1)
            }
            #expect(try await store.deleteRegistration(id: "r", ifVersion: 2))
            #expect(try await store.deleteRegistration(id: "r", ifVersion: 2) == false)
        },

        check("deleteRemovesRegistrationTagsAndValidity") { store, _ in
            _ = try await store.upsertRegistration(.sample(id: "r", tags: ["t"]), ifVersion: nil)
            #expect(try await store.isRegistrationIDValid("r"))
            #expect(try await store.deleteRegistration(id: "r", ifVersion: nil))
            #expect(try await store.deleteRegistration(id: "r", ifVersion: nil) == false)
            #expect(try await store.registration(id: "r") == nil)
            #expect(try await store.isRegistrationIDValid("r") == false)
            #expect(try await store.registrations(matching: .tag("t"), platforms: nil, after: nil, limit: 10).isEmpty)

            // Deleting a reserved id drops the reservation.
            try await store.reserveRegistrationID("reserved", owner: nil, ttl: .seconds(60))
            #expect(try await store.deleteRegistration(id: "reserved", ifVersion: nil) == false)
            #expect(try await store.isRegistrationIDValid("reserved") == false)
        },

        check("deleteManyInOneCall") { store, _ in
            let registrations = (0..<1200).map { Registration.sample(id: String(format: "r%05d", $0), tags: ["all"]) }
            try await store.insertRegistrations(registrations)
            #expect(try await store.registrationCount() == 1200)
            try await store.deleteRegistrations(ids: registrations.prefix(1100).map(\.id) + ["unknown"])
            #expect(try await store.registrationCount() == 100)
            let left = try await store.registrations(matching: .tag("all"), platforms: nil, after: nil, limit: 1000)
            #expect(left.map(\.id) == registrations.suffix(100).map(\.id))
        },

        check("reservationsAreValidUntilTheyExpireAndAreConsumed") { store, clock in
            #expect(try await store.isRegistrationIDValid("new-id") == false)
            try await store.reserveRegistrationID("new-id", owner: "alice", ttl: .seconds(30))
            #expect(try await store.isRegistrationIDValid("new-id"))
            clock.advance(by: .seconds(29))
            #expect(try await store.isRegistrationIDValid("new-id"))
            clock.advance(by: .seconds(2))
            #expect(try await store.isRegistrationIDValid("new-id") == false)

            // An upsert consumes the reservation; the id stays valid as a registration.
            try await store.reserveRegistrationID("used-id", owner: nil, ttl: .seconds(30))
            _ = try await store.upsertRegistration(.sample(id: "used-id"), ifVersion: nil)
            #expect(try await store.deleteRegistration(id: "used-id", ifVersion: nil))
            #expect(try await store.isRegistrationIDValid("used-id") == false)
        },

        check("lookupByHandleOldestFirst") { store, clock in
            _ = try await store.upsertRegistration(.sample(id: "z-first", platform: .fcm, handle: "token-1"), ifVersion: nil)
            clock.advance(by: .seconds(1))
            _ = try await store.upsertRegistration(.sample(id: "a-second", platform: .fcm, handle: "token-1"), ifVersion: nil)
            clock.advance(by: .seconds(1))
            _ = try await store.upsertRegistration(.sample(id: "m-third", platform: .wns, handle: "token-1"), ifVersion: nil)
            _ = try await store.upsertRegistration(.sample(id: "other", platform: .fcm, handle: "token-2"), ifVersion: nil)

            #expect(try await store.registrations(handle: "token-1", platform: nil).map(\.id) == ["z-first", "a-second", "m-third"])
            #expect(try await store.registrations(handle: "token-1", platform: .fcm).map(\.id) == ["z-first", "a-second"])
            #expect(try await store.registrations(handle: "token-1", platform: .apns).isEmpty)
            #expect(try await store.registrations(handle: "nobody", platform: nil).isEmpty)
        },

        check("insertRegistrationsKeepsGivenDatesAndVersionsExisting") { store, _ in
            let created = Date(timeIntervalSince1970: 1_600_000_000.001)
            var registrations = (0..<1234).map { i in
                Registration(
                    id: String(format: "bulk-%05d", i), platform: Platform.allCases[i % 4], handle: "h\(i)",
                    tags: ["bulk", "n\(i % 7)"], createdAt: created, updatedAt: created)
            }
            try await store.insertRegistrations(registrations)
            #expect(try await store.registrationCount() == 1234)
            let first = try #require(try await store.registration(id: "bulk-00000"))
            #expect(first.version == 1)
            #expect(first.createdAt == created)
            #expect(first.tags == ["bulk", "n0"])

            // Inserting again upserts: version + 1, createdAt kept, tags replaced.
            registrations[0].tags = ["again"]
            registrations[0].createdAt = Date()
            try await store.insertRegistrations(Array(registrations[0..<1]))
            let again = try #require(try await store.registration(id: "bulk-00000"))
            #expect(again.version == 2)
            #expect(again.createdAt == created)
            #expect(try await store.registrations(matching: .tag("again"), platforms: nil, after: nil, limit: 10).map(\.id) == ["bulk-00000"])
            #expect(try await store.registrations(matching: .tag("n0"), platforms: nil, after: nil, limit: 1000).count == 176)

            // The same id twice in one call: applied in order, the last one wins.
            try await store.insertRegistrations([
                Registration(id: "twice", platform: .fcm, handle: "first", tags: ["one"]),
                Registration(id: "twice", platform: .fcm, handle: "second", tags: ["two"]),
            ])
            let twice = try #require(try await store.registration(id: "twice"))
            #expect(twice.handle == "second")
            #expect(twice.version == 2)
            #expect(try await store.registrations(matching: .tag("one"), platforms: nil, after: nil, limit: 10).isEmpty)
        },

        check("concurrentUpsertsAreAllCommittedWithTheirOwnResults") { store, _ in
            // Many at once, so that they are group-committed; some ids repeat within a batch.
            let results = try await withThrowingTaskGroup(of: Registration.self) { group in
                for i in 0..<300 {
                    group.addTask {
                        try await store.upsertRegistration(.sample(id: "c\(i % 100)", tags: ["t\(i)"]), ifVersion: nil)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count == 300)
            for id in (0..<100).map({ "c\($0)" }) {
                let versions = results.filter { $0.id == id }.map(\.version).sorted()
                #expect(versions == [1, 2, 3], "versions of \(id)")
                let stored = try #require(try await store.registration(id: id))
                #expect(stored.version == 3)
                // The last writer's tags are the stored ones, and only those are indexed.
                let last = try #require(results.first { $0.id == id && $0.version == 3 })
                #expect(stored.tags == last.tags)
            }
            var tagged = 0
            for i in 0..<300 {
                tagged += try await store.registrations(matching: .tag("t\(i)"), platforms: nil, after: nil, limit: 10).count
            }
            #expect(tagged == 100)
        },

        check("concurrentConditionalUpsertsLetOneWinPerVersion") { store, _ in
            _ = try await store.upsertRegistration(.sample(id: "r"), ifVersion: nil)
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for i in 0..<20 {
                    group.addTask {
                        (try? await store.upsertRegistration(.sample(id: "r", tags: ["w\(i)"]), ifVersion: 1)) != nil
                    }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 1)
            #expect(try await store.registration(id: "r")?.version == 2)
        },
    ]

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "registrations", name: name, body: body)
    }
}
