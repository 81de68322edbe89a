import Foundation
import HeraldTestSupport
import Testing

/// `herald admin`, as an operator of the server runs it: one-time passwords shown once,
/// clear errors, and nothing changed by a command that fails.
@Suite("herald admin")
struct AdminCommandTests {
    @Test func operatorsAreCreatedListedResetAndDeleted() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-admin-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let data = ["--data-dir", directory]
        let created = try await HeraldCommand.run(["admin", "create", "Ops"] + data)
        #expect(created.status == 0, "\(created.error)")
        #expect(created.output.contains("Created the operator ops."))
        let password = try #require(created.output.split(separator: "\n").first { $0.hasPrefix("One-time password: ") })
        #expect(password.count == "One-time password: ".count + 24)
        #expect(created.output.contains("/console"))

        let again = try await HeraldCommand.run(["admin", "create", "ops"] + data)
        #expect(again.status == 1)
        #expect(again.error.contains("the operator ops exists"))
        let bad = try await HeraldCommand.run(["admin", "create", "no spaces"] + data)
        #expect(bad.status == 1)
        #expect(bad.error.contains("a user name has only letters"))

        let listed = try await HeraldCommand.run(["admin", "list"] + data)
        #expect(listed.output.contains("ops") && listed.output.contains("one-time (not signed in yet)"))
        #expect(!listed.output.contains(password.dropFirst("One-time password: ".count)), "a password is shown once only")

        let reset = try await HeraldCommand.run(["admin", "reset-password", "ops"] + data)
        #expect(reset.status == 0)
        #expect(reset.output.contains("New one-time password for ops: "))
        let unknown = try await HeraldCommand.run(["admin", "reset-password", "nobody"] + data)
        #expect(unknown.status == 1)
        #expect(unknown.error.contains("there is no operator nobody"))

        #expect(try await HeraldCommand.run(["admin", "delete", "ops"] + data).output.contains("Deleted the operator ops."))
        #expect(try await HeraldCommand.run(["admin", "list"] + data).output.contains("No operators yet"))
        // The file that keeps them is private to the service's user.
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/shared-values.json")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }
}
