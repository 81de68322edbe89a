import Foundation
import HeraldCore
import HeraldStore
import Logging
import Synchronization
import Testing

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let current: Mutex<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000.123)) {
        current = Mutex(start)
    }

    var now: Date { current.withLock { $0 } }

    func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        current.withLock { $0 += Double(seconds) + Double(attoseconds) / 1e18 }
    }
}

/// A directory under the temporary directory, removed by ``remove()``.
struct TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-store-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A database path in a subdirectory that does not exist yet (the store creates it).
    var databasePath: String { url.appendingPathComponent("data/herald.sqlite").path }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

let testLogger: Logger = {
    var logger = Logger(label: "herald.store.tests")
    logger.logLevel = .critical
    return logger
}()

/// Opens a store on a fresh file, runs `body`, closes the store and removes the file.
func withStore<T>(
    clock: TestClock = TestClock(),
    configuration: SQLiteStore.Configuration = .init(),
    _ body: (SQLiteStore, TestClock) async throws -> T
) async throws -> T {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let store = try await SQLiteStore.open(
        path: directory.databasePath, configuration: configuration, logger: testLogger, now: { clock.now })
    do {
        let result = try await body(store, clock)
        try await store.close()
        return result
    } catch {
        try? await store.close()
        throw error
    }
}

/// A deterministic random number generator (SplitMix64), so that a failure can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension Registration {
    static func sample(
        id: String = RegistrationID.make(),
        platform: Platform = .apns,
        handle: String? = nil,
        tags: [String] = [],
        owner: String? = nil,
        expiresAt: Date? = nil
    ) -> Registration {
        Registration(
            id: id,
            platform: platform,
            handle: handle ?? String(repeating: "ab", count: 32),
            webPushKeys: platform == .webpush ? WebPushKeys(p256dh: "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM", auth: "tBHItJI5svbpez7KI4CCXg") : nil,
            tags: tags,
            owner: owner,
            expiresAt: expiresAt
        )
    }
}

/// Builds a database file at `path` (and its directory) as an older Herald left it: the given
/// statements only, no store involved.
func makeDatabase(at path: String, statements: [String]) async throws {
    let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try await SQLiteStore.executeForTesting(path: path, statements: statements, logger: testLogger)
}

/// Opens a store at `path`, runs `body`, and closes the store whether or not `body` throws.
func withStore<T>(
    at path: String,
    clock: TestClock = TestClock(),
    _ body: (SQLiteStore) async throws -> T
) async throws -> T {
    let store = try await SQLiteStore.open(path: path, logger: testLogger, now: { clock.now })
    do {
        let result = try await body(store)
        try await store.close()
        return result
    } catch {
        try? await store.close()
        throw error
    }
}
