import Crypto
import Foundation
import Logging
import Testing

@testable import HeraldPush

@Suite struct APNsTokenCacheTests {
    let key = P256.Signing.PrivateKey()
    let lifetime: TimeInterval = 50 * 60

    @Test func oneTokenPerTeamAndKey() throws {
        let clock = TestClock()
        let cache = APNsTokenCache(now: clock.function)
        let a = cache.entry(teamID: "TEAM000001", keyID: "KEY0000001")
        let b = cache.entry(teamID: "TEAM000001", keyID: "KEY0000001")
        let otherKey = cache.entry(teamID: "TEAM000001", keyID: "KEY0000002")
        let otherTeam = cache.entry(teamID: "TEAM000002", keyID: "KEY0000001")
        #expect(a === b)
        #expect(a !== otherKey && a !== otherTeam)

        let first = try a.token(key: key, lifetime: lifetime)
        #expect(try b.token(key: key, lifetime: lifetime) == first)
        #expect(try otherKey.token(key: key, lifetime: lifetime).authorization != first.authorization)
        #expect(try otherTeam.token(key: key, lifetime: lifetime).authorization != first.authorization)
    }

    @Test func providersOfOneKeyShareTheToken() async throws {
        let cache = APNsTokenCache(now: TestClock().function)
        var configuration = APNsConfiguration(
            environment: .sandbox, teamID: "TEAM000003", keyID: "KEY0000003",
            privateKeyPEM: key.pemRepresentation, topic: "com.example.app")
        configuration.connections = 1
        let p1 = try APNsProvider(configuration: configuration, logger: Logger(label: "test"), tokenCache: cache)
        let p2 = try APNsProvider(configuration: configuration, logger: Logger(label: "test"), tokenCache: cache)
        #expect(p1.tokenEntry === p2.tokenEntry)
        #expect(p1.tokenEntry === cache.entry(teamID: "TEAM000003", keyID: "KEY0000003"))
        try await p1.shutdown()
        try await p2.shutdown()
    }

    @Test func reusedUntilTheLifetimeEnds() throws {
        let clock = TestClock()
        let entry = APNsTokenCache(now: clock.function).entry(teamID: "T", keyID: "K")
        let first = try entry.token(key: key, lifetime: lifetime)
        #expect(first.issuedAt == clock.now)

        clock.advance(minutes: 49.9)
        #expect(try entry.token(key: key, lifetime: lifetime) == first)

        clock.advance(minutes: 0.1)
        let second = try entry.token(key: key, lifetime: lifetime)
        #expect(second != first)
        #expect(second.generation == first.generation + 1)
        #expect(second.issuedAt == clock.now)
        let claims = try DecodedJWT(second.jwt).claims
        #expect((claims["iat"] as? Int) == Int(clock.now.timeIntervalSince1970))
    }

    @Test func expiredProviderTokenRefreshesOnlyAnOldEnoughCurrentToken() throws {
        let clock = TestClock()
        let entry = APNsTokenCache(now: clock.function).entry(teamID: "T", keyID: "K")
        let first = try entry.token(key: key, lifetime: lifetime)

        // Younger than 20 minutes: a new token would be refused (TooManyProviderTokenUpdates).
        clock.advance(minutes: 19)
        #expect(entry.expired(first) == false)
        #expect(try entry.token(key: key, lifetime: lifetime) == first)

        clock.advance(minutes: 1)
        #expect(entry.expired(first) == true)
        let second = try entry.token(key: key, lifetime: lifetime)
        #expect(second.generation == first.generation + 1)

        // Many sends that used the old token report the same 403: only one refresh.
        clock.advance(minutes: 25)
        #expect(entry.expired(first) == false)
        #expect(try entry.token(key: key, lifetime: lifetime) == second)
    }

    @Test func stateMachineWithoutIO() {
        var state = APNsTokenState()
        let t0 = Date(timeIntervalSince1970: 1_000_000)
        #expect(state.tokenNeeded(now: t0, lifetime: 3000) == .sign(generation: 1))
        let token = APNsProviderToken(authorization: "bearer x", issuedAt: t0, generation: 1)
        state.signed(token)
        #expect(state.tokenNeeded(now: t0.addingTimeInterval(2999), lifetime: 3000) == .use(token))
        // A clock stepping backwards keeps the token.
        #expect(state.tokenNeeded(now: t0.addingTimeInterval(-600), lifetime: 3000) == .use(token))
        #expect(state.tokenNeeded(now: t0.addingTimeInterval(3000), lifetime: 3000) == .sign(generation: 2))
        let tooYoung = state.expiredProviderToken(token, now: t0.addingTimeInterval(1199))
        #expect(!tooYoung)
        let oldEnough = state.expiredProviderToken(token, now: t0.addingTimeInterval(1200))
        #expect(oldEnough)
        #expect(state.current == nil)
        #expect(state.tokenNeeded(now: t0.addingTimeInterval(1200), lifetime: 3000) == .sign(generation: 2))
    }
}
