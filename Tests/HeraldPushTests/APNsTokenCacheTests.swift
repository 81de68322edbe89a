import Crypto
import Foundation
import Logging
import Synchronization
import Testing

@testable import HeraldPush

@Suite struct APNsTokenCacheTests {
    let key = P256.Signing.PrivateKey()
    let lifetime: TimeInterval = 50 * 60

    @Test func oneTokenPerTeamAndKey() async throws {
        let clock = TestClock()
        let cache = APNsTokenCache(now: clock.function)
        let a = cache.entry(teamID: "TEAM000001", keyID: "KEY0000001", publicKey: key.publicKey)
        let b = cache.entry(teamID: "TEAM000001", keyID: "KEY0000001", publicKey: key.publicKey)
        let otherKey = cache.entry(teamID: "TEAM000001", keyID: "KEY0000002", publicKey: key.publicKey)
        let otherTeam = cache.entry(teamID: "TEAM000002", keyID: "KEY0000001", publicKey: key.publicKey)
        #expect(a === b)
        #expect(a !== otherKey && a !== otherTeam)

        let first = try await a.token(key: key, lifetime: lifetime)
        #expect(try await b.token(key: key, lifetime: lifetime) == first)
        #expect(try await otherKey.token(key: key, lifetime: lifetime).authorization != first.authorization)
        #expect(try await otherTeam.token(key: key, lifetime: lifetime).authorization != first.authorization)
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
        #expect(p1.tokenEntry === cache.entry(teamID: "TEAM000003", keyID: "KEY0000003", publicKey: key.publicKey))
        try await p1.shutdown()
        try await p2.shutdown()
    }

    @Test func reusedUntilTheLifetimeEnds() async throws {
        let clock = TestClock()
        let entry = APNsTokenCache(now: clock.function).entry(teamID: "T", keyID: "K", publicKey: key.publicKey)
        let first = try await entry.token(key: key, lifetime: lifetime)
        #expect(first.issuedAt == clock.now)

        clock.advance(minutes: 49.9)
        #expect(try await entry.token(key: key, lifetime: lifetime) == first)

        clock.advance(minutes: 0.1)
        let second = try await entry.token(key: key, lifetime: lifetime)
        #expect(second != first)
        #expect(second.generation == first.generation + 1)
        #expect(second.issuedAt == clock.now)
        let claims = try DecodedJWT(second.jwt).claims
        #expect((claims["iat"] as? Int) == Int(clock.now.timeIntervalSince1970))
    }

    @Test func expiredProviderTokenRefreshesOnlyAnOldEnoughCurrentToken() async throws {
        let clock = TestClock()
        let entry = APNsTokenCache(now: clock.function).entry(teamID: "T", keyID: "K", publicKey: key.publicKey)
        let first = try await entry.token(key: key, lifetime: lifetime)

        // Younger than 20 minutes: a new token would be refused (TooManyProviderTokenUpdates).
        clock.advance(minutes: 19)
        #expect(entry.expired(first) == false)
        #expect(try await entry.token(key: key, lifetime: lifetime) == first)

        clock.advance(minutes: 1)
        #expect(entry.expired(first) == true)
        let second = try await entry.token(key: key, lifetime: lifetime)
        #expect(second.generation == first.generation + 1)

        // Many sends that used the old token report the same 403: only one refresh.
        clock.advance(minutes: 25)
        #expect(entry.expired(first) == false)
        #expect(try await entry.token(key: key, lifetime: lifetime) == second)
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

    @Test func aRestartedProcessGoesOnWithTheStoredToken() async throws {
        let clock = TestClock()
        let storage = MemoryTokenStorage()
        let before = APNsTokenCache(storage: storage, now: clock.function).entry(teamID: "T", keyID: "K", publicKey: key.publicKey)
        let first = try await before.token(key: key, lifetime: lifetime)
        #expect(storage.writes == 1)

        // A new process (a new cache) 10 minutes later: the stored token, not a new one.
        clock.advance(minutes: 10)
        let after = APNsTokenCache(storage: storage, now: clock.function).entry(teamID: "T", keyID: "K", publicKey: key.publicKey)
        let adopted = try await after.token(key: key, lifetime: lifetime)
        #expect(adopted.jwt == first.jwt)
        #expect(adopted.issuedAt == first.issuedAt)
        #expect(storage.writes == 1)

        // At the end of its lifetime, one new token, stored in place of the old one.
        clock.advance(minutes: 40)
        let renewed = try await after.token(key: key, lifetime: lifetime)
        #expect(renewed.jwt != first.jwt)
        #expect(storage.writes == 2)
        #expect(storage.value(named: after.storageName).flatMap(StoredAPNsToken.init)?.jwt == String(renewed.jwt))
    }

    @Test func nodesStartingAtOnceShareOneToken() async throws {
        let clock = TestClock()
        let storage = MemoryTokenStorage()
        let key = self.key
        let lifetime = self.lifetime
        let tokens = try await withThrowingTaskGroup(of: Substring.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    let entry = APNsTokenCache(storage: storage, now: clock.function).entry(teamID: "T", keyID: "K", publicKey: key.publicKey)
                    return try await entry.token(key: key, lifetime: lifetime).jwt
                }
            }
            return try await group.reduce(into: Set<Substring>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1)
    }

    @Test func concurrentSendersOfOneProcessWaitForOneRefresh() async throws {
        let storage = MemoryTokenStorage(delay: .milliseconds(50))
        let entry = APNsTokenCache(storage: storage, now: TestClock().function).entry(teamID: "T", keyID: "K", publicKey: self.key.publicKey)
        let key = self.key
        let lifetime = self.lifetime
        let tokens = try await withThrowingTaskGroup(of: Substring.self) { group in
            for _ in 0..<20 { group.addTask { try await entry.token(key: key, lifetime: lifetime).jwt } }
            return try await group.reduce(into: Set<Substring>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1)
        #expect(storage.reads == 1)
        #expect(storage.writes == 1)
    }

    @Test func aStoredTokenAPNsCalledExpiredIsReplaced() async throws {
        let clock = TestClock()
        let storage = MemoryTokenStorage()
        let entry = APNsTokenCache(storage: storage, now: clock.function).entry(teamID: "T", keyID: "K", publicKey: key.publicKey)
        let first = try await entry.token(key: key, lifetime: lifetime)
        clock.advance(minutes: 30)
        #expect(entry.expired(first))
        let second = try await entry.token(key: key, lifetime: lifetime)
        #expect(second.jwt != first.jwt)
        #expect(storage.value(named: entry.storageName).flatMap(StoredAPNsToken.init)?.jwt == String(second.jwt))
    }

    @Test func unreadableStorageStillSigns() async throws {
        let storage = MemoryTokenStorage()
        storage.failing = true
        let entry = APNsTokenCache(storage: storage, now: TestClock().function).entry(teamID: "T", keyID: "K", publicKey: key.publicKey)
        let token = try await entry.token(key: key, lifetime: lifetime)
        #expect(!token.jwt.isEmpty)
    }

    @Test func tooManyUpdatesGoesBackToTheValidEarlierTokenOrPauses() async throws {
        let clock = TestClock()
        let storage = MemoryTokenStorage()
        let entry = APNsTokenCache(storage: storage, now: clock.function).entry(teamID: "T", keyID: "K", publicKey: key.publicKey)
        let first = try await entry.token(key: key, lifetime: lifetime)
        clock.advance(minutes: 50)
        let second = try await entry.token(key: key, lifetime: lifetime)
        #expect(second != first)

        // APNs took another token of the key recently: the earlier one (50 minutes old) is
        // still valid, so sends go on with it, and it is stored again.
        #expect(entry.tooManyUpdates(second) == .reverted(first))
        #expect(try await entry.token(key: key, lifetime: 60 * 60) == first)
        try await storage.waitForWrites(3)
        #expect(storage.value(named: entry.storageName).flatMap(StoredAPNsToken.init)?.jwt == String(first.jwt))
        // A late refusal of the replaced token changes nothing.
        #expect(entry.tooManyUpdates(second) == .retry)

        // With no valid earlier token there is nothing to send with: pause.
        let fresh = APNsTokenCache(now: clock.function).entry(teamID: "T", keyID: "K", publicKey: key.publicKey)
        let only = try await fresh.token(key: key, lifetime: lifetime)
        #expect(fresh.tooManyUpdates(only) == .pause)
    }

    @Test func pauseLetsOneProbeThroughAtItsEnd() {
        var pause = APNsPause()
        let t0 = ContinuousClock.now
        #expect(pause.admit(now: t0) == .send)
        let began = pause.pause(until: t0 + .seconds(60))
        #expect(began)
        #expect(pause.admit(now: t0 + .seconds(10)) == .wait(.seconds(50)))
        #expect(pause.admit(now: t0 + .seconds(60)) == .send)
        #expect(pause.admit(now: t0 + .seconds(60)) == .wait(.seconds(1)))
        // The probe was refused again: a new pause, not a new start.
        let beganAgain = pause.pause(until: t0 + .seconds(120))
        #expect(!beganAgain)
        #expect(pause.admit(now: t0 + .seconds(121)) == .send)
        pause.answered()
        #expect(pause.admit(now: t0 + .seconds(121)) == .send)
        #expect(pause.until == nil)
    }

    /// A team id and a key id are public: another tenant's hub given them with a key of its own
    /// gets a slot of its own, and neither adopts the other's stored token.
    @Test func theSameIDsWithAnotherKeyShareNothing() async throws {
        let clock = TestClock()
        let storage = MemoryTokenStorage()
        let cache = APNsTokenCache(storage: storage, now: clock.function)
        let junk = P256.Signing.PrivateKey()
        let tenant = cache.entry(teamID: "T", keyID: "K", publicKey: key.publicKey)
        let intruder = cache.entry(teamID: "T", keyID: "K", publicKey: junk.publicKey)
        #expect(tenant !== intruder)
        #expect(tenant.storageName != intruder.storageName)

        let theirs = try await intruder.token(key: junk, lifetime: lifetime)
        let ours = try await tenant.token(key: key, lifetime: lifetime)
        #expect(ours.jwt != theirs.jwt)
        #expect(StoredAPNsToken(ours).isSigned(by: key.publicKey, teamID: "T", keyID: "K"))
        #expect(!StoredAPNsToken(theirs).isSigned(by: key.publicKey, teamID: "T", keyID: "K"))
    }

    /// A token in the slot's storage that was not signed with the slot's key (written there by
    /// whoever can write the storage, or by an older release that named slots by ids only) is
    /// not used: a token is signed and stored in its place.
    @Test func aStoredTokenOfAnotherKeyIsNotAdopted() async throws {
        let clock = TestClock()
        let storage = MemoryTokenStorage()
        let entry = APNsTokenCache(storage: storage, now: clock.function).entry(teamID: "T", keyID: "K", publicKey: key.publicKey)
        let forged = try APNsProviderToken.sign(teamID: "T", keyID: "K", key: P256.Signing.PrivateKey(), issuedAt: clock.now, generation: 1)
        _ = try await storage.replaceStoredToken(named: entry.storageName, expected: nil, with: StoredAPNsToken(forged).encoded)
        let wrongTeam = try APNsProviderToken.sign(teamID: "OTHER", keyID: "K", key: key, issuedAt: clock.now, generation: 1)
        #expect(!StoredAPNsToken(wrongTeam).isSigned(by: key.publicKey, teamID: "T", keyID: "K"))

        let token = try await entry.token(key: key, lifetime: lifetime)
        #expect(token.jwt != forged.jwt)
        #expect(StoredAPNsToken(token).isSigned(by: key.publicKey, teamID: "T", keyID: "K"))
        #expect(storage.value(named: entry.storageName).flatMap(StoredAPNsToken.init)?.jwt == String(token.jwt))
    }
}

/// Shared values in memory, counting reads and writes.
final class MemoryTokenStorage: ProviderTokenStorage {
    private let state = Mutex<(values: [String: String], reads: Int, writes: Int, failing: Bool)>(([:], 0, 0, false))
    let delay: Duration

    init(delay: Duration = .zero) { self.delay = delay }

    var reads: Int { state.withLock { $0.reads } }
    var writes: Int { state.withLock { $0.writes } }
    var failing: Bool {
        get { state.withLock { $0.failing } }
        set { state.withLock { $0.failing = newValue } }
    }

    func value(named name: String) -> String? { state.withLock { $0.values[name] } }

    func waitForWrites(_ count: Int) async throws {
        for _ in 0..<200 where writes < count { try await Task.sleep(for: .milliseconds(10)) }
    }

    func storedToken(named name: String) async throws -> String? {
        try await Task.sleep(for: delay)
        return try state.withLock { state in
            if state.failing { throw CancellationError() }
            state.reads += 1
            return state.values[name]
        }
    }

    func replaceStoredToken(named name: String, expected: String?, with value: String) async throws -> String {
        try await Task.sleep(for: delay)
        return try state.withLock { state in
            if state.failing { throw CancellationError() }
            guard state.values[name] == expected else { return state.values[name] ?? value }
            state.values[name] = value
            state.writes += 1
            return value
        }
    }
}
