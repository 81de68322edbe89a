import Foundation
import Testing
import VaporCSQLite

@testable import HeraldSQLite

@Suite("One SQLite connection: values, kept statements, errors")
struct SQLiteConnectionTests {
    private func withConnection(_ body: (SQLiteConnection) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sqlite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let connection = try await SQLiteConnection.open(path: directory.appendingPathComponent("test.sqlite").path)
        do {
            try await body(connection)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }

    @Test func everyStorageClassRoundTrips() async throws {
        try await withConnection { connection in
            try await connection.query("CREATE TABLE t (v)")
            let values: [SQLiteData] = [
                .integer(0), .integer(Int.max), .integer(Int.min), .float(1.5), .float(-0.25),
                .text(""), .text("plain"), .text("é✓ \u{0} after a NUL"), .blob([]), .blob([0, 1, 255]), .null,
            ]
            for value in values {
                try await connection.query("INSERT INTO t (v) VALUES (?)", [value])
            }
            let rows = try await connection.query("SELECT v, typeof(v) AS type FROM t ORDER BY rowid")
            #expect(rows.map { $0.column("v") } == values)
            // An empty text or blob is not NULL.
            #expect(
                rows.map { $0.column("type")?.string } == [
                    "integer", "integer", "integer", "real", "real", "text", "text", "text", "blob", "blob", "null",
                ])
        }
    }

    @Test func statementsAreKeptAndReused() async throws {
        try await withConnection { connection in
            try await connection.query("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
            let kept = connection.cachedStatementsForTesting
            for id in 1...50 {
                try await connection.query("INSERT INTO t (id, name) VALUES (?, ?)", [.integer(id), .text("n\(id)")])
            }
            #expect(connection.cachedStatementsForTesting == kept + 1)
            // The kept statement's bindings are cleared after each use: a missing bind is NULL.
            let rows = try await connection.query("SELECT count(*) AS n, sum(length(name)) AS total FROM t")
            #expect(rows.first?.column("n") == .integer(50))
            let total = (1...50).map { "n\($0)".count }.reduce(0, +)
            #expect(rows.first?.column("total") == .integer(total))
            #expect(connection.cachedStatementsForTesting == kept + 2)
        }
    }

    @Test func theCacheKeepsTheMostRecentlyUsed() async throws {
        try await withConnection { connection in
            let capacity = SQLiteConnection.cacheCapacity
            for value in 0..<(capacity * 2) {
                let rows = try await connection.query("SELECT \(value) AS v")
                #expect(rows.first?.column("v") == .integer(value))
                // One statement stays in use throughout, and so is never the one dropped.
                try await connection.query("SELECT 'hot'")
            }
            #expect(connection.cachedStatementsForTesting == capacity)
            #expect(try await connection.query("SELECT 'hot' AS v").first?.column("v") == .text("hot"))
        }
    }

    /// SQLite's plans do not depend on bound values, so no binding makes a kept statement
    /// compile again (without the stability guarantee, each of these would at every run).
    @Test func newBindingsDoNotCompileAKeptStatementAgain() async throws {
        try await withConnection { connection in
            try await connection.query("CREATE TABLE t (id INTEGER PRIMARY KEY, state TEXT NOT NULL, name TEXT)")
            try await connection.query("CREATE INDEX t_due ON t (state, id) WHERE state IN ('a', 'b')")
            for id in 1...20 {
                try await connection.query("INSERT INTO t (id, state, name) VALUES (?, ?, ?)", [.integer(id), .text(id % 2 == 0 ? "a" : "c"), .text("n\(id)")])
            }
            for limit in 1...5 {
                #expect(try await connection.query("SELECT id FROM t ORDER BY id LIMIT ?", [.integer(limit)]).count == limit)
                #expect(try await connection.query("SELECT id FROM t WHERE state = ? ORDER BY id", [.text(limit % 2 == 0 ? "a" : "c")]).count == 10)
                #expect(try await connection.query("SELECT id FROM t WHERE name LIKE ?", [.text("n\(limit)%")]).count >= 1)
            }
            #expect(connection.recompiledStatementsForTesting == [:])
        }
    }

    @Test func aSchemaChangeGivesAKeptStatementItsNewColumns() async throws {
        try await withConnection { connection in
            try await connection.query("CREATE TABLE t (a)")
            try await connection.query("INSERT INTO t (a) VALUES (1)")
            #expect(try await connection.query("SELECT * FROM t").first?.columns.names == ["a"])
            try await connection.query("ALTER TABLE t ADD COLUMN b DEFAULT 2")
            let row = try #require(try await connection.query("SELECT * FROM t").first)
            #expect(row.columns.names == ["a", "b"])
            #expect(row.column("b") == .integer(2))
        }
    }

    @Test func columnsAreFoundByNameTheFirstOfTwoWinning() {
        // Names of one length and the same outer bytes land on one slot; an empty name too.
        let names =
            ["id", "created_at", "updated_at", "expires_at", "ab", "ba", "", "id", "x"]
            + (0..<40).map { "column_\($0)" }
        let columns = SQLiteColumns(names: names)
        for (index, name) in names.enumerated() where names.firstIndex(of: name) == index {
            #expect(columns.index(of: name) == index, "\(name)")
        }
        #expect(columns.index(of: "id") == 0)
        #expect(columns.index(of: "missing") == nil)
        #expect(columns.index(of: "created_a") == nil)
        #expect(SQLiteColumns(names: []).index(of: "id") == nil)
    }

    @Test func errorsCarryTheExtendedCodeAndLeaveTheStatementUsable() async throws {
        try await withConnection { connection in
            try await connection.query("CREATE TABLE t (id INTEGER PRIMARY KEY)")
            let insert = "INSERT INTO t (id) VALUES (?)"
            try await connection.query(insert, [.integer(1)])
            let error = try await #require(throws: SQLiteError.self) {
                try await connection.query(insert, [.integer(1)])
            }
            #expect(error.code == SQLITE_CONSTRAINT | (6 << 8))  // SQLITE_CONSTRAINT_PRIMARYKEY
            #expect(error.primaryCode == SQLITE_CONSTRAINT)
            #expect(!error.isBusy && !error.isFull)
            try await connection.query(insert, [.integer(2)])
            #expect(try await connection.query("SELECT count(*) AS n FROM t").first?.column("n") == .integer(2))

            let syntax = try await #require(throws: SQLiteError.self) { try await connection.query("SELEC 1") }
            #expect(syntax.primaryCode == SQLITE_ERROR)
            #expect(syntax.message.contains("syntax error"))
            let range = try await #require(throws: SQLiteError.self) { try await connection.query("SELECT ?", [.integer(1), .integer(2)]) }
            #expect(range.primaryCode == SQLITE_RANGE)
        }
    }

    @Test func aClosedConnectionRefusesQueries() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sqlite-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let connection = try await SQLiteConnection.open(path: path)
        try await connection.query("SELECT 1")
        try await connection.close()
        try await connection.close()
        let error = try await #require(throws: SQLiteError.self) { try await connection.query("SELECT 1") }
        #expect(error.primaryCode == SQLITE_MISUSE)
    }

    @Test func aFileThatCannotBeOpenedIsAnError() async throws {
        let error = try await #require(throws: SQLiteError.self) {
            try await SQLiteConnection.open(path: "/nonexistent-directory-\(UUID().uuidString)/test.sqlite")
        }
        #expect(error.primaryCode == SQLITE_CANTOPEN)
    }
}
