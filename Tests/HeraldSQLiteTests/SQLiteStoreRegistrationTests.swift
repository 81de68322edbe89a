import Foundation
import HeraldCore
import HeraldSQLite
import HeraldStore
import HeraldStoreConformance
import Testing

/// What the SQLite file holds for registrations, beyond the store contract (which the
/// conformance suite checks).
@Suite("SQLiteStore registrations")
struct SQLiteStoreRegistrationTests {
    @Test func expiredReservationsAreSwept() async throws {
        try await withStore { store, clock in
            try await store.reserveRegistrationID("old", owner: nil, ttl: .seconds(1))
            clock.advance(by: .seconds(120))
            // The next reservation after the sweep interval removes expired ones.
            try await store.reserveRegistrationID("fresh", owner: nil, ttl: .seconds(60))
            #expect(try await store.integerForTesting("SELECT count(*) FROM reservations WHERE id = 'old'") == 0)
            #expect(try await store.isRegistrationIDValid("fresh"))
        }
    }

    /// A conditional update that takes a registration's template and push variables away
    /// stores NULL in both columns.
    @Test func templateFieldsTakenAwayAreStoredAsNull() async throws {
        try await withStore { store, _ in
            let created = try await store.upsertRegistration(
                Registration(
                    id: "t1", platform: .wns, handle: "https://wns.example/channel/1", tags: ["news"],
                    template: RegistrationTemplate(name: "toast", body: "<toast/>"), pushVariables: ["name": "Ann"]
                ),
                ifVersion: nil
            )
            var native = created
            native.template = nil
            native.pushVariables = [:]
            _ = try await store.upsertRegistration(native, ifVersion: 1)
            #expect(try await store.integerForTesting("SELECT count(*) FROM registrations WHERE template IS NULL AND push_variables IS NULL") == 1)
        }
    }
}
