import Foundation
package import Logging

extension PostgresDatabase {
    /// Runs `body` with a running `PostgresDatabase` on `url` — its pool connected, its schema
    /// brought up to date when `migrate` is set — and stops it when `body` returns.
    package static func with<T>(
        url: DatabaseURL,
        maximumConnections: Int = 8,
        migrate: Bool = true,
        logger: Logger,
        _ body: (PostgresDatabase) async throws -> T
    ) async throws -> T {
        let database = PostgresDatabase(url: url, maximumConnections: maximumConnections, logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await database.run() }
            defer { group.cancelAll() }
            if migrate { _ = try await database.migrate() }
            return try await body(database)
        }
    }

    /// Runs `body` with the URL of a new, empty database on the server of `server` (its other
    /// parameters kept), named `prefix` and a random suffix, and drops that database when
    /// `body` returns or throws: for benchmarks and tests that need a deployment of their own.
    ///
    /// The user of `server` needs the `CREATEDB` privilege.
    package static func withScratchDatabase<T>(
        on server: DatabaseURL,
        prefix: String,
        logger: Logger,
        _ body: (DatabaseURL) async throws -> T
    ) async throws -> T {
        let name = prefix + "_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        try await with(url: server, maximumConnections: 1, migrate: false, logger: logger) { admin in
            try await admin.execute(unsafeSQL: "CREATE DATABASE \(name)")
        }
        var url = server
        url.database = name
        let result: T
        do {
            result = try await body(url)
        } catch {
            try? await dropDatabase(name, on: server, logger: logger)
            throw error
        }
        try await dropDatabase(name, on: server, logger: logger)
        return result
    }

    private static func dropDatabase(_ name: String, on server: DatabaseURL, logger: Logger) async throws {
        try await with(url: server, maximumConnections: 1, migrate: false, logger: logger) { admin in
            try await admin.execute(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        }
    }
}
