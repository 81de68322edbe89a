import Foundation
import HeraldCore
import HeraldHub
import HeraldPush
import HeraldSQLite
import HeraldStore
import Logging
import NIOCore
import Synchronization
import Testing

/// A push provider that keeps what it is given, in memory: the engine's logic is tested
/// without a network. (Not an HTTP mock: providers are tested against the emulators.)
final class RecordingProvider: PushProvider {
    /// One send as the provider received it.
    struct Sent: Sendable, Hashable {
        var handle: String
        /// The bytes, or the FCM message as JSON with sorted keys.
        var body: String
        /// Header names lowercased.
        var headers: [String: String]
        var webPushKeys: WebPushKeys?
    }

    private struct State {
        var sent: [Sent] = []
        var expired: Set<String> = []
        /// Run once the provider has received this many sends.
        var atCount: (count: Int, action: @Sendable () -> Void)?
    }

    let platform: Platform
    private let state = Mutex(State())

    init(_ platform: Platform) { self.platform = platform }

    var sent: [Sent] { state.withLock { $0.sent } }

    /// Later sends to `handle` get "channel expired".
    func expire(_ handle: String) { _ = state.withLock { $0.expired.insert(handle) } }

    /// Runs `action` when the provider has received `count` sends.
    func whenSent(_ count: Int, _ action: @escaping @Sendable () -> Void) { state.withLock { $0.atCount = (count, action) } }

    func send(_ notification: PushNotification, to target: PushTarget) async -> PushResult {
        let body: String
        switch notification.body {
        case .bytes(let bytes):
            body = String(buffer: bytes)
        case .fcmMessage(let message):
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            body = String(decoding: (try? encoder.encode(message)) ?? Data(), as: UTF8.self)
        }
        var headers: [String: String] = [:]
        for header in notification.headers { headers[header.name.lowercased()] = header.value }
        let sent = Sent(handle: target.handle, body: body, headers: headers, webPushKeys: target.webPushKeys)
        let (expired, action) = state.withLock { state in
            state.sent.append(sent)
            return (state.expired.contains(target.handle), state.atCount?.count == state.sent.count ? state.atCount?.action : nil)
        }
        action?()
        if expired { return PushResult(disposition: .channelExpired, outcome: .expiredChannel, status: 410, reason: "Unregistered") }
        return .delivered
    }

    func shutdown() async throws {}
}

let hubTestLogger: Logger = {
    var logger = Logger(label: "herald.appHubEngine.tests")
    logger.logLevel = .critical
    return logger
}()

/// A hub over a SQLite store in a fresh temporary directory, with recording providers for
/// APNs, FCM, WNS and Web Push.
struct HubFixture {
    let engine: HubEngine
    let store: SQLiteStore
    let apns: RecordingProvider
    let fcm: RecordingProvider
    let wns: RecordingProvider
    let webPush: RecordingProvider

    static func with<T>(
        platforms: Set<Platform> = Set(Platform.allCases),
        configure: (inout HubEngine.Configuration) -> Void = { _ in },
        _ body: (HubFixture) async throws -> T
    ) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-hub-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try await SQLiteStore.open(path: directory.appendingPathComponent("herald.sqlite").path, logger: hubTestLogger)
        let providers = [RecordingProvider(.apns), RecordingProvider(.fcm), RecordingProvider(.wns), RecordingProvider(.webpush)]
        var configuration = HubEngine.Configuration()
        configuration.retry = RetryPolicy(maxAttempts: 1)
        // The recording providers reach no host: handles may name any (example.com's).
        configuration.channelHosts = PushChannelHosts(wns: .anyHost, webPush: .anyHost)
        configure(&configuration)
        let engine = HubEngine(
            store: store,
            providers: providers.filter { platforms.contains($0.platform) },
            configuration: configuration,
            logger: hubTestLogger
        )
        let fixture = HubFixture(
            engine: engine, store: store, apns: providers[0], fcm: providers[1], wns: providers[2], webPush: providers[3]
        )
        do {
            let result = try await body(fixture)
            try await store.close()
            return result
        } catch {
            try? await store.close()
            throw error
        }
    }

    /// Stores registrations as they are.
    func register(_ registrations: Registration...) async throws {
        try await store.insertRegistrations(registrations)
    }

    /// Delivers everything that is due now; returns how many notifications were delivered.
    @discardableResult
    func deliverAll(now: Date = Date()) async throws -> Int {
        var delivered = 0
        while try await engine.deliverNext(now: now) { delivered += 1 }
        return delivered
    }

    /// The notification as stored.
    func stored(_ id: String) async throws -> NotificationRecord {
        try #require(try await engine.notification(id: id))
    }
}

/// A distinct APNs device token (64 hex digits) for `n`.
func apnsToken(_ n: Int) -> String {
    let hex = String(n, radix: 16)
    return String(repeating: "0", count: 64 - hex.count) + hex
}

extension Registration {
    /// A native APNs registration.
    static func apns(_ n: Int, tags: [String] = [], id: String? = nil, kind: HandleKind = .device) -> Registration {
        Registration(id: id ?? String(format: "reg-%05d", n), platform: .apns, handle: apnsToken(n), handleKind: kind, tags: tags)
    }

    /// A template registration.
    static func template(
        _ id: String,
        platform: Platform = .apns,
        handle: String,
        tags: [String] = [],
        template: RegistrationTemplate,
        pushVariables: [String: String] = [:],
        legacyGCM: Bool = false
    ) -> Registration {
        Registration(
            id: id, platform: platform, handle: handle, tags: tags, template: template, pushVariables: pushVariables,
            legacyGCM: legacyGCM
        )
    }
}

extension OutcomeCounts {
    func count(_ outcome: DeliveryOutcome, _ platform: Platform) -> Int { counts[platform]?[outcome] ?? 0 }
}
