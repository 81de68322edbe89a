import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// The registration fields and listings of the hub API.
enum HubRegistrationChecks {
    static let toast = RegistrationTemplate(
        name: "toast",
        body: #"<toast><visual><binding template="ToastText01"><text id="1">$(message)</text></binding></visual></toast>"#,
        headers: [.init(name: "X-WNS-Type", value: "wns/toast"), .init(name: "X-WNS-Tag", value: "$(tag)")],
        expiry: "$(expiry)",
        priority: "10"
    )

    static func template(id: String, handle: String = "https://wns.example/channel/1", tags: [String] = ["news"]) -> Registration {
        Registration(
            id: id, platform: .wns, handle: handle, tags: tags, template: toast,
            pushVariables: ["name": "Ann", "city": "Oslo/Bergen"]
        )
    }

    /// Reads every page of a listing.
    static func listAll(_ store: any HeraldStore, _ filter: RegistrationFilter, pageSize: Int, after start: String? = nil) async throws -> [String] {
        var ids: [String] = []
        var cursor = start
        while true {
            let page = try await store.listRegistrations(filter, after: cursor, limit: pageSize)
            #expect(page.count <= pageSize)
            ids += page.map(\.id)
            guard page.count == pageSize, let last = page.last else { return ids }
            cursor = last.id
        }
    }

    static let all: [StoreCheck] =
        [
            check("templateFieldsRoundTripThroughEveryWrite") { store, _ in
                // upsertRegistration (the group-committed insert).
                let created = try await store.upsertRegistration(HubRegistrationChecks.template(id: "t1"), ifVersion: nil)
                #expect(created.template == HubRegistrationChecks.toast)
                #expect(created.pushVariables == ["name": "Ann", "city": "Oslo/Bergen"])
                #expect(try await store.registration(id: "t1") == created)

                // An unconditional replace writes them (the multi-row upsert's update branch)…
                var replaced = created
                replaced.pushVariables = ["name": "Bo"]
                replaced.template?.body = "<toast/>"
                replaced.legacyGCM = true
                let second = try await store.upsertRegistration(replaced, ifVersion: nil)
                #expect(second.version == 2)
                #expect(try await store.registration(id: "t1") == second)
                #expect(second.pushVariables == ["name": "Bo"])
                #expect(second.template?.body == "<toast/>")
                #expect(second.legacyGCM)

                // …and so does the conditional update, including taking them away.
                var native = second
                native.template = nil
                native.pushVariables = [:]
                native.legacyGCM = false
                let updated = try await store.upsertRegistration(native, ifVersion: 2)
                #expect(updated.template == nil)
                #expect(updated.pushVariables.isEmpty)
                #expect(try await store.registration(id: "t1") == updated)
                var back = updated
                back.template = HubRegistrationChecks.toast
                #expect(try await store.upsertRegistration(back, ifVersion: 3).template == HubRegistrationChecks.toast)

                // Legacy GCM and the installation link.
                let gcm = try await store.upsertRegistration(
                    Registration(id: "g1", platform: .fcm, handle: "fcm-token", tags: ["news"], legacyGCM: true),
                    ifVersion: nil
                )
                #expect(gcm.legacyGCM)
                #expect(try await store.registration(id: "g1")?.legacyGCM == true)

                // insertRegistrations.
                var bulk = HubRegistrationChecks.template(id: "t2")
                bulk.legacyGCM = true
                bulk.installationID = "inst-x"
                try await store.insertRegistrations([bulk])
                let inserted = try #require(try await store.registration(id: "t2"))
                #expect(inserted.template == HubRegistrationChecks.toast)
                #expect(inserted.pushVariables == bulk.pushVariables)
                #expect(inserted.legacyGCM)
                #expect(inserted.installationID == "inst-x")

                // Every read carries them: resolution pages and lookups by handle.
                let resolved = try await store.registrations(matching: .tag("news"), platforms: nil, after: nil, limit: 10)
                #expect(resolved.map(\.id) == ["g1", "t1", "t2"])
                try #require(resolved.count == 3)
                #expect(resolved[1].template == HubRegistrationChecks.toast)
                #expect(resolved[2] == inserted)
                let anyTag = try await store.registrations(matching: .or(.tag("news"), .tag("x")), platforms: [.wns], after: nil, limit: 10)
                #expect(anyTag.map(\.template) == [HubRegistrationChecks.toast, HubRegistrationChecks.toast])
                let scanned = try await store.registrations(matching: .not(.tag("x")), platforms: [.fcm], after: nil, limit: 10)
                #expect(scanned.map(\.legacyGCM) == [true])
                #expect(try await store.registrations(handle: "https://wns.example/channel/1", platform: .wns).map(\.pushVariables.count) == [0, 2])
            },

            check("concurrentTemplateUpsertsKeepTheirOwnFields") { store, _ in
                // Group-committed in multi-row statements: each row must keep its own fields.
                let results = try await withThrowingTaskGroup(of: Registration.self) { group in
                    for i in 0..<200 {
                        group.addTask {
                            var registration = HubRegistrationChecks.template(id: String(format: "r%03d", i))
                            registration.pushVariables = ["i": "\(i)"]
                            registration.template = i % 2 == 0 ? HubRegistrationChecks.toast : nil
                            registration.legacyGCM = i % 3 == 0
                            return try await store.upsertRegistration(registration, ifVersion: nil)
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(results.count == 200)
                for result in results {
                    let i = Int(result.id.dropFirst())!
                    let stored = try #require(try await store.registration(id: result.id))
                    #expect(stored == result)
                    #expect(stored.pushVariables == ["i": "\(i)"])
                    #expect((stored.template != nil) == (i % 2 == 0))
                    #expect(stored.legacyGCM == (i % 3 == 0))
                }
            },

            check("listingsPageByIDAndLeaveOutInstallations") { store, clock in
                // Direct registrations, one of them expired; "!early" sorts before the installations'
                // ids, the others after them.
                _ = try await store.upsertRegistration(.sample(id: "!early", handle: "h1", tags: ["a"]), ifVersion: nil)
                _ = try await store.upsertRegistration(.sample(id: "r1", handle: "h1", tags: ["a", "b"]), ifVersion: nil)
                _ = try await store.upsertRegistration(.sample(id: "r2", handle: "h2", tags: ["b"]), ifVersion: nil)
                _ = try await store.upsertRegistration(.sample(id: "r3", handle: "h1", tags: ["a"], expiresAt: clock.now.addingTimeInterval(1)), ifVersion: nil)
                _ = try await store.upsertRegistration(.sample(id: "r4", handle: "H1", tags: ["c"]), ifVersion: nil)
                // Installations with the same handle and tags.
                for i in 0..<5 {
                    _ = try await store.upsertInstallation(
                        Installation(id: "i\(i)", platform: .apns, pushChannel: "h1", tags: ["a", "b"], templates: ["t": InstallationTemplate(body: "{}")]),
                        ifVersion: nil
                    )
                }
                clock.advance(by: .seconds(10))
                #expect(try await store.registrationCount() == 15)

                for pageSize in [1, 2, 3, 100] {
                    #expect(try await HubRegistrationChecks.listAll(store, RegistrationFilter(), pageSize: pageSize) == ["!early", "r1", "r2", "r3", "r4"])
                    #expect(try await HubRegistrationChecks.listAll(store, RegistrationFilter(tag: "a"), pageSize: pageSize) == ["!early", "r1", "r3"])
                    #expect(try await HubRegistrationChecks.listAll(store, RegistrationFilter(tag: "b"), pageSize: pageSize) == ["r1", "r2"])
                    // Handles compare exactly.
                    #expect(try await HubRegistrationChecks.listAll(store, RegistrationFilter(handle: "h1"), pageSize: pageSize) == ["!early", "r1", "r3"])
                    #expect(try await HubRegistrationChecks.listAll(store, RegistrationFilter(handle: "H1"), pageSize: pageSize) == ["r4"])
                    #expect(try await HubRegistrationChecks.listAll(store, RegistrationFilter(handle: "h1", tag: "b"), pageSize: pageSize) == ["r1"])
                }
                #expect(try await HubRegistrationChecks.listAll(store, RegistrationFilter(tag: "none"), pageSize: 10).isEmpty)
                #expect(try await HubRegistrationChecks.listAll(store, RegistrationFilter(handle: "none"), pageSize: 10).isEmpty)
                #expect(try await store.listRegistrations(RegistrationFilter(), after: nil, limit: 0).isEmpty)

                // A cursor anywhere, even inside the installations' range of ids.
                #expect(
                    try await HubRegistrationChecks.listAll(store, RegistrationFilter(), pageSize: 2, after: "$installation:i2") == ["r1", "r2", "r3", "r4"])
                #expect(try await HubRegistrationChecks.listAll(store, RegistrationFilter(tag: "a"), pageSize: 2, after: "$installation:i2") == ["r1", "r3"])
                #expect(try await HubRegistrationChecks.listAll(store, RegistrationFilter(), pageSize: 2, after: "r1") == ["r2", "r3", "r4"])
                #expect(try await HubRegistrationChecks.listAll(store, RegistrationFilter(), pageSize: 2, after: "") == ["!early", "r1", "r2", "r3", "r4"])

                // Listed registrations are whole.
                let first = try #require(try await store.listRegistrations(RegistrationFilter(tag: "b"), after: nil, limit: 1).first)
                #expect(first == (try await store.registration(id: "r1")))
            },
        ] + [nil, "news", "news || sport"].map(sendsReadOnlyTheirKindOfRegistration)

    /// A native send reads native registrations only, a template send template ones only, on
    /// every resolution path (scan, one tag, any of several tags).
    static func sendsReadOnlyTheirKindOfRegistration(expression: String?) -> StoreCheck {
        check("sendsReadOnlyTheirKindOfRegistration(expression: \(expression.map { "\"\($0)\"" } ?? "nil"))") { store, _ in
            for n in 0..<3 {
                _ = try await store.upsertRegistration(.sample(id: "n\(n)", platform: .wns, tags: ["news"]), ifVersion: nil)
                _ = try await store.upsertRegistration(HubRegistrationChecks.template(id: "t\(n)", handle: "https://wns.example/\(n)"), ifVersion: nil)
            }
            let parsed = try expression.map { try TagExpression(parsing: $0) }
            func ids(_ kind: RegistrationKind?) async throws -> [String] {
                try await store.registrations(matching: parsed, platforms: nil, kind: kind, after: nil, limit: 10).map(\.id)
            }
            #expect(try await ids(.native) == ["n0", "n1", "n2"])
            #expect(try await ids(.template) == ["t0", "t1", "t2"])
            #expect(try await ids(nil) == ["n0", "n1", "n2", "t0", "t1", "t2"])
            // Pages of one kind are full pages: the other kind takes no room in them.
            let page = try await store.registrations(matching: parsed, platforms: nil, kind: .template, after: nil, limit: 2)
            #expect(page.map(\.id) == ["t0", "t1"])
        }
    }

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "template registrations and listings", name: name, body: body)
    }
}
