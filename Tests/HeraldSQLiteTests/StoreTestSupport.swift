import Foundation
import HeraldSQLite
import HeraldStore
import HeraldStoreConformance
import Logging

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
    clock: StoreTestClock = StoreTestClock(),
    configuration: SQLiteStore.Configuration = .init(),
    _ body: (SQLiteStore, StoreTestClock) async throws -> T
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
    clock: StoreTestClock = StoreTestClock(),
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
