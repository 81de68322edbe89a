import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// Installations, each stored whole and expanded into registrations in the same transaction.
enum InstallationChecks {
    static let greeting = InstallationTemplate(
        body: #"{"aps":{"alert":"$(message)"}}"#, headers: ["apns-priority": "10"], expiry: "$(expiry)", tags: ["greetings"]
    )
    static let silent = InstallationTemplate(body: #"{"aps":{"content-available":1}}"#, tags: ["silent"])

    /// The registrations that carry the installation's implicit `$InstallationId` tag.
    static func derived(_ store: any HeraldStore, _ installationID: String) async throws -> [Registration] {
        let tag = try #require(Installation.sample(id: installationID).implicitTags.first)
        return try await store.registrations(matching: .tag(tag), platforms: nil, after: nil, limit: 100)
    }

    static let all: [StoreCheck] = [
        check("upsertStoresTheInstallationAndItsRegistrations") { store, clock in
            let input = Installation(
                id: "inst-1", platform: .fcm, legacyGCM: true, pushChannel: "fcm-token-1", userId: "alice", tags: ["sports", "news"],
                templates: ["greeting": InstallationChecks.greeting, "silent": InstallationChecks.silent], pushVariables: ["name": "Alice"],
                expirationTime: Date(timeIntervalSince1970: 1_800_000_000.1234),
                version: 42, createdAt: Date(timeIntervalSince1970: 0), updatedAt: Date(timeIntervalSince1970: 0)
            )
            let saved = try await store.upsertInstallation(input, ifVersion: nil)
            #expect(saved.version == 1)
            #expect(saved.createdAt == clock.now)
            #expect(saved.updatedAt == clock.now)
            #expect(saved.tags == ["sports", "news"])
            #expect(saved.templates == input.templates)
            #expect(abs(saved.expirationTime!.timeIntervalSince(input.expirationTime!)) < 0.001)
            #expect(try await store.installation(id: "inst-1") == saved)
            #expect(try await store.installation(id: "missing") == nil)

            // One native registration and one per template, as the installation expands.
            let registrations = try await InstallationChecks.derived(store, "inst-1")
            #expect(registrations.map(\.id) == ["$installation:inst-1", "$installation:inst-1/greeting", "$installation:inst-1/silent"])
            let expected = saved.registrations()
            try #require(registrations.count == expected.count)
            for (stored, wanted) in zip(registrations, expected) {
                #expect(stored.installationID == "inst-1")
                #expect(stored.platform == .fcm)
                #expect(stored.legacyGCM)
                #expect(stored.handle == "fcm-token-1")
                #expect(stored.tags == wanted.tags)
                #expect(stored.template == wanted.template)
                #expect(stored.pushVariables == ["name": "Alice"])
                #expect(stored.expiresAt == saved.expirationTime)
                #expect(stored.version == 1)
                #expect(stored.createdAt == clock.now)
                #expect(try await store.registration(id: stored.id) == stored)
            }
            #expect(registrations[1].template?.name == "greeting")
            #expect(registrations[1].tags.contains("greetings"))
            #expect(!registrations[0].tags.contains("greetings"))

            // Sends reach them through the tag index like any registration.
            let userTag = try #require(saved.implicitTags.last)
            #expect(userTag.contains("alice"))
            #expect(try await store.registrations(matching: .tag(userTag), platforms: nil, after: nil, limit: 10).count == 3)
            #expect(try await store.registrations(matching: .tag("silent"), platforms: nil, after: nil, limit: 10).map(\.id) == ["$installation:inst-1/silent"])
            #expect(try await store.registrationCount() == 3)
            // Listings of registrations leave them out.
            #expect(try await store.listRegistrations(RegistrationFilter(), after: nil, limit: 10).isEmpty)
            #expect(try await store.listRegistrations(RegistrationFilter(handle: "fcm-token-1"), after: nil, limit: 10).isEmpty)
            #expect(try await store.listRegistrations(RegistrationFilter(tag: "sports"), after: nil, limit: 10).isEmpty)
        },

        check("replacingFollowsTheTemplatesAndKeepsCreatedAt") { store, clock in
            let created = try await store.upsertInstallation(
                .sample(templates: ["greeting": InstallationChecks.greeting, "silent": InstallationChecks.silent]), ifVersion: nil)
            clock.advance(by: .seconds(30))

            var changed = created
            changed.templates = ["greeting": InstallationChecks.greeting, "other": InstallationTemplate(body: "{}", tags: ["o"])]
            changed.tags = ["weather"]
            changed.pushChannel = String(repeating: "ef", count: 32)
            changed.pushVariables = ["name": "Alicia", "city": "Oslo"]
            changed.createdAt = Date(timeIntervalSince1970: 0)  // ignored
            let updated = try await store.upsertInstallation(changed, ifVersion: nil)
            #expect(updated.version == 2)
            #expect(updated.createdAt == created.createdAt)
            #expect(updated.updatedAt == clock.now)
            #expect(try await store.installation(id: "inst-1") == updated)

            let registrations = try await InstallationChecks.derived(store, "inst-1")
            #expect(registrations.map(\.id) == ["$installation:inst-1", "$installation:inst-1/greeting", "$installation:inst-1/other"])
            try #require(registrations.count == 3)
            #expect(registrations.allSatisfy { $0.handle == changed.pushChannel && $0.tags.contains("weather") && !$0.tags.contains("sports") })
            #expect(registrations.allSatisfy { $0.pushVariables == changed.pushVariables })
            // Kept registrations are replaced (version 2, first createdAt); a new one starts at 1.
            #expect(registrations.map(\.version) == [2, 2, 1])
            #expect(registrations[0].createdAt == created.createdAt)
            #expect(registrations[2].createdAt == clock.now)
            #expect(try await store.registration(id: "$installation:inst-1/silent") == nil)
            #expect(try await store.registrations(matching: .tag("sports"), platforms: nil, after: nil, limit: 10).isEmpty)
            #expect(try await store.registrationCount() == 3)
        },

        check("ifVersionMustMatch") { store, _ in
            // A missing installation never matches.
            await expectCodedError(.versionMismatch, of: StoreError.self) { _ = try await store.upsertInstallation(.sample(), ifVersion: 1) }
            #expect(try await store.installation(id: "inst-1") == nil)
            #expect(try await store.registrationCount() == 0)

            _ = try await store.upsertInstallation(.sample(tags: ["a"]), ifVersion: nil)
            #expect(try await store.upsertInstallation(.sample(tags: ["b"]), ifVersion: 1).version == 2)
            await expectCodedError(.versionMismatch, of: StoreError.self) {
                _ = try await store.upsertInstallation(.sample(tags: ["c"], templates: ["t": InstallationChecks.silent]), ifVersion: 1)
            }
            let stored = try #require(try await store.installation(id: "inst-1"))
            #expect(stored.version == 2)
            #expect(stored.tags == ["b"])
            #expect(try await InstallationChecks.derived(store, "inst-1").map(\.id) == ["$installation:inst-1"])
        },

        check("concurrentConditionalWritesHaveOneWinner") { store, _ in
            _ = try await store.upsertInstallation(.sample(), ifVersion: nil)
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for i in 0..<10 {
                    group.addTask {
                        (try? await store.upsertInstallation(.sample(tags: ["writer-\(i)"]), ifVersion: 1)) != nil
                    }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 1)
            let stored = try #require(try await store.installation(id: "inst-1"))
            #expect(stored.version == 2)
            let native = try #require(try await store.registration(id: "$installation:inst-1"))
            #expect(native.tags.contains(stored.tags[0]))
        },

        check("deleteRemovesTheInstallationAndItsRegistrations") { store, _ in
            _ = try await store.upsertInstallation(.sample(templates: ["greeting": InstallationChecks.greeting]), ifVersion: nil)
            _ = try await store.upsertInstallation(.sample(id: "inst-2"), ifVersion: nil)
            #expect(try await store.deleteInstallation(id: "inst-1"))
            #expect(try await store.installation(id: "inst-1") == nil)
            #expect(try await InstallationChecks.derived(store, "inst-1").isEmpty)
            #expect(try await store.isRegistrationIDValid("$installation:inst-1") == false)
            #expect(try await store.listInstallations(userId: nil, tag: "sports", after: nil, limit: 10).map(\.id) == ["inst-2"])
            #expect(try await store.deleteInstallation(id: "inst-1") == false)
            // The other installation is untouched.
            #expect(try await InstallationChecks.derived(store, "inst-2").count == 1)
            #expect(try await store.registrationCount() == 1)
        },

        check("listingsPageByIDAndFilterByUserAndTag") { store, _ in
            for (id, user, tags) in [
                ("i5", "alice", ["a"]), ("i1", "alice", ["a"]), ("i2", "bob", ["a", "b"]), ("i3", "alice", ["b"]), ("i4", nil, ["a"]),
            ] {
                _ = try await store.upsertInstallation(
                    .sample(id: id, userId: user, tags: tags, templates: ["t": InstallationTemplate(body: "{}", tags: ["template-only"])]),
                    ifVersion: nil
                )
            }
            func all(userId: String?, tag: String?, pageSize: Int) async throws -> [String] {
                var ids: [String] = []
                var cursor: String?
                while true {
                    let page = try await store.listInstallations(userId: userId, tag: tag, after: cursor, limit: pageSize)
                    #expect(page.count <= pageSize)
                    ids += page.map(\.id)
                    guard page.count == pageSize, let last = page.last else { return ids }
                    cursor = last.id
                }
            }
            #expect(try await all(userId: nil, tag: nil, pageSize: 2) == ["i1", "i2", "i3", "i4", "i5"])
            #expect(try await all(userId: "alice", tag: nil, pageSize: 2) == ["i1", "i3", "i5"])
            #expect(try await all(userId: nil, tag: "a", pageSize: 3) == ["i1", "i2", "i4", "i5"])
            #expect(try await all(userId: "alice", tag: "a", pageSize: 1) == ["i1", "i5"])
            #expect(try await all(userId: "carol", tag: nil, pageSize: 10).isEmpty)
            // Template tags are not the installation's tags.
            #expect(try await all(userId: nil, tag: "template-only", pageSize: 10).isEmpty)
            #expect(try await store.listInstallations(userId: nil, tag: nil, after: nil, limit: 0).isEmpty)
            let first = try #require(try await store.listInstallations(userId: nil, tag: nil, after: nil, limit: 1).first)
            #expect(first == (try await store.installation(id: "i1")))

            // The tag index follows the tags.
            _ = try await store.upsertInstallation(.sample(id: "i1", userId: "bob", tags: ["b"]), ifVersion: nil)
            #expect(try await all(userId: nil, tag: "a", pageSize: 10) == ["i2", "i4", "i5"])
            #expect(try await all(userId: nil, tag: "b", pageSize: 10) == ["i1", "i2", "i3"])
            #expect(try await all(userId: "bob", tag: nil, pageSize: 10) == ["i1", "i2"])
        },

        check("anExpiredChannelKeepsTheInstallationAndDropsItsRegistrations") { store, clock in
            let created = try await store.upsertInstallation(
                .sample(templates: ["greeting": InstallationChecks.greeting, "silent": InstallationChecks.silent]), ifVersion: nil)
            _ = try await store.upsertInstallation(.sample(id: "inst-2"), ifVersion: nil)
            _ = try await store.upsertRegistration(.sample(id: "direct", tags: ["sports"]), ifVersion: nil)
            clock.advance(by: .seconds(5))

            // Feedback names one of its registrations (and a direct one, and an unknown id).
            try await store.deleteRegistrations(ids: ["$installation:inst-1/silent", "direct", "unknown"])
            let expired = try #require(try await store.installation(id: "inst-1"))
            #expect(expired.pushChannelExpired)
            #expect(expired.version == 2)
            #expect(expired.updatedAt == clock.now)
            #expect(expired.createdAt == created.createdAt)
            #expect(expired.templates == created.templates)
            #expect(try await InstallationChecks.derived(store, "inst-1").isEmpty)
            #expect(try await store.registration(id: "direct") == nil)
            #expect(try await store.registrations(matching: .tag("sports"), platforms: nil, after: nil, limit: 10).map(\.id) == ["$installation:inst-2"])
            #expect(try await store.installation(id: "inst-2")?.pushChannelExpired == false)

            // Feedback for it again changes nothing more.
            try await store.deleteRegistrations(ids: ["$installation:inst-1"])
            #expect(try await store.installation(id: "inst-1")?.version == 2)

            // Written with the channel still expired, it stays without registrations.
            let stillExpired = try await store.upsertInstallation(expired, ifVersion: 2)
            #expect(stillExpired.pushChannelExpired)
            #expect(try await InstallationChecks.derived(store, "inst-1").isEmpty)

            // The next PUT (which clears the flag) restores them.
            var renewed = stillExpired
            renewed.pushChannelExpired = false
            let restored = try await store.upsertInstallation(renewed, ifVersion: nil)
            #expect(restored.pushChannelExpired == false)
            #expect(try await InstallationChecks.derived(store, "inst-1").count == 3)
        },

        /// A derived registration id held by a registration of something else is never taken over.
        check("aRegistrationIDHeldElsewhereIsAConflict") { store, _ in
            let squatter = try await store.upsertRegistration(.sample(id: "$installation:inst-1/t", tags: ["x"]), ifVersion: nil)
            await expectHeraldError(.conflict) {
                _ = try await store.upsertInstallation(.sample(templates: ["t": InstallationChecks.silent]), ifVersion: nil)
            }
            #expect(try await store.installation(id: "inst-1") == nil)
            #expect(try await store.registration(id: "$installation:inst-1") == nil)
            #expect(try await store.registration(id: "$installation:inst-1/t") == squatter)
        },

        /// Writes that arrive together (which a store may apply together) each succeed or fail
        /// alone: a held registration id or a stale version fails its own write only, and two
        /// writes of one installation both land, one after the other.
        check("concurrentWritesSucceedOrFailAlone") { store, _ in
            let squatter = try await store.upsertRegistration(.sample(id: "$installation:inst-7/t", tags: ["x"]), ifVersion: nil)
            _ = try await store.upsertInstallation(.sample(id: "inst-3"), ifVersion: nil)
            enum Outcome: Hashable, Sendable { case saved(Int), failed(HeraldError.Code), stale }
            let outcomes = await withTaskGroup(of: (String, Outcome).self) { group in
                for index in 0..<40 {
                    group.addTask {
                        // inst-7 collides with the squatter; inst-3 is written with a stale version;
                        // inst-5 is written twice.
                        let id = "inst-\(index < 38 ? index : 5)"
                        let templates = id == "inst-7" ? ["t": InstallationChecks.silent] : [:]
                        do {
                            let saved = try await store.upsertInstallation(
                                .sample(id: id, pushChannel: String(format: "%064x", index), tags: ["n\(index)"], templates: templates),
                                ifVersion: id == "inst-3" ? 7 : nil
                            )
                            return ("\(index)", .saved(saved.version))
                        } catch let error as StoreError where error.code == .versionMismatch {
                            return ("\(index)", .stale)
                        } catch let error as HeraldError {
                            return ("\(index)", .failed(error.code))
                        } catch {
                            return ("\(index)", .failed(.internalError))
                        }
                    }
                }
                var outcomes: [String: Outcome] = [:]
                for await (index, outcome) in group { outcomes[index] = outcome }
                return outcomes
            }
            #expect(outcomes["7"] == .failed(.conflict))
            #expect(outcomes["3"] == .stale)
            for index in 0..<38 where ![3, 5, 7].contains(index) {
                #expect(outcomes["\(index)"] == .saved(1), "inst-\(index)")
                #expect(try await store.installation(id: "inst-\(index)")?.tags == ["n\(index)"])
                #expect(try await InstallationChecks.derived(store, "inst-\(index)").count == 1)
            }
            // The three writes of inst-5 landed one after the other.
            let fives = [outcomes["5"], outcomes["38"], outcomes["39"]].compactMap { $0 }
            #expect(Set(fives) == [.saved(1), .saved(2), .saved(3)])
            #expect(try await store.installation(id: "inst-5")?.version == 3)
            #expect(try await store.installation(id: "inst-3")?.version == 1)
            #expect(try await store.installation(id: "inst-7") == nil)
            #expect(try await store.registration(id: "$installation:inst-7") == nil)
            #expect(try await store.registration(id: "$installation:inst-7/t") == squatter)
        },
    ]

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "installations", name: name, body: body)
    }
}
