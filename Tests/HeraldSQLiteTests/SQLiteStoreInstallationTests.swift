import Foundation
import HeraldCore
import HeraldSQLite
import HeraldStore
import HeraldStoreConformance
import Testing

/// What the SQLite file holds for installations, beyond the store contract (which the
/// conformance suite checks).
@Suite("SQLiteStore installations")
struct SQLiteStoreInstallationTests {
    static let greeting = InstallationTemplate(
        body: #"{"aps":{"alert":"$(message)"}}"#, headers: ["apns-priority": "10"], expiry: "$(expiry)", tags: ["greetings"]
    )
    static let silent = InstallationTemplate(body: #"{"aps":{"content-available":1}}"#, tags: ["silent"])

    /// The registrations that carry the installation's implicit `$InstallationId` tag.
    static func derived(_ store: SQLiteStore, _ installationID: String) async throws -> [Registration] {
        let tag = try #require(Installation.sample(id: installationID).implicitTags.first)
        return try await store.registrations(matching: .tag(tag), platforms: nil, after: nil, limit: 100)
    }

    /// The installation and its registrations are one transaction: when a registration
    /// cannot be written, neither is the installation, and nothing of an earlier version is lost.
    @Test func aFailedWriteLeavesNeitherTheInstallationNorItsRegistrations() async throws {
        try await withStore { store, _ in
            try await store.executeForTesting(
                """
                CREATE TRIGGER inject_failure BEFORE INSERT ON registrations WHEN NEW.id LIKE '%/boom'
                BEGIN SELECT RAISE(ABORT, 'injected failure'); END
                """
            )
            let boom = InstallationTemplate(body: "{}")

            // A new installation.
            await #expect(throws: StoreError(code: .database, message: "")) {
                _ = try await store.upsertInstallation(.sample(templates: ["a": Self.silent, "boom": boom]), ifVersion: nil)
            }
            #expect(try await store.installation(id: "inst-1") == nil)
            #expect(try await store.registrationCount() == 0)
            #expect(try await store.listInstallations(userId: "alice", tag: "sports", after: nil, limit: 10).isEmpty)

            // An existing one: the old version and all its registrations stay.
            let first = try await store.upsertInstallation(.sample(templates: ["a": Self.silent, "b": Self.greeting]), ifVersion: nil)
            let registrations = try await Self.derived(store, "inst-1")
            await #expect(throws: StoreError(code: .database, message: "")) {
                _ = try await store.upsertInstallation(.sample(tags: ["other"], templates: ["a": Self.silent, "boom": boom]), ifVersion: nil)
            }
            #expect(try await store.installation(id: "inst-1") == first)
            #expect(try await Self.derived(store, "inst-1") == registrations)
            #expect(try await store.listInstallations(userId: nil, tag: "other", after: nil, limit: 10).isEmpty)
        }
    }

    @Test func installationsSurviveARestart() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = StoreTestClock()
        let saved = try await withStore(at: directory.databasePath, clock: clock) { store throws in
            try await store.upsertInstallation(
                Installation(
                    id: "w1", platform: .webpush, pushChannel: "https://push.example/w1",
                    webPushKeys: WebPushKeys(p256dh: "BPk", auth: "AuT"), tags: ["t"], templates: ["x": Self.greeting]
                ),
                ifVersion: nil
            )
        }
        try await withStore(at: directory.databasePath, clock: clock) { store throws in
            #expect(try await store.installation(id: "w1") == saved)
            // The stored document's shape is part of the file format: changing it needs a migration.
            #expect(
                try await store.integerForTesting(
                    """
                    SELECT json_extract(document, '$.platform') = 'webpush' AND json_extract(document, '$.p256dh') = 'BPk'
                        AND json_extract(document, '$.auth') = 'AuT' AND json_extract(document, '$.pushChannel') = 'https://push.example/w1'
                        AND json_extract(document, '$.legacyGCM') = 0 AND json_extract(document, '$.pushChannelExpired') = 0
                        AND json_extract(document, '$.templates.x.headers.apns-priority') = '10'
                        AND json_extract(document, '$.templates.x.tags[0]') = 'greetings'
                        AND json_extract(document, '$.templates.x.expiry') = '$(expiry)'
                        AND json_type(document, '$.expirationTime') IS NULL AND json_type(document, '$.pushVariables') = 'object'
                        AND tags = '["t"]' AND user_id IS NULL
                    FROM installations WHERE id = 'w1'
                    """
                ) == 1
            )
            let registrations = try await store.registrations(matching: .tag("t"), platforms: [.webpush], after: nil, limit: 10)
            #expect(registrations.map(\.id) == ["$installation:w1", "$installation:w1/x"])
            #expect(registrations.allSatisfy { $0.webPushKeys == saved.webPushKeys })
        }
    }
}
