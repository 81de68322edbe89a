import Foundation
import HeraldTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("herald serve as a user runs it")
struct ServeCommandTests {
    /// A port that is taken is said once, clearly, with no banner claiming that Herald listens.
    @Test(arguments: ["port", "tls-port"])
    func aTakenPortIsAClearErrorAndNoBanner(_ option: String) async throws {
        let taken = try ListeningSocket()
        defer { taken.close() }
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-serve-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let free = try ListeningSocket()
        let freePort = free.port
        free.close()
        let ports = option == "port" ? ["--port", "\(taken.port)", "--tls-port", "0"] : ["--port", "\(freePort)", "--tls-port", "\(taken.port)"]
        let result = try await HeraldCommand.run(["serve", "--data-dir", data] + ports, environment: ["HERALD_LOG_LEVEL": "error"])
        #expect(result.status == 1)
        #expect(!result.output.contains("Herald is listening"), "\(result.output)")
        let name = option == "port" ? "port" : "TLS port"
        #expect(
            result.error.contains("cannot listen on 127.0.0.1:\(taken.port): the address is in use"),
            "\(result.error)"
        )
        #expect(result.error.contains("choose another \(name) with --\(option)"), "\(result.error)")
        // The stores were closed on the way out (a debug build asserts otherwise).
        #expect(!result.error.contains("Assertion failed"), "\(result.error)")
    }

    /// A secure-payload key file given in `HERALD_SECURE_PAYLOAD_KEY_FILE` that is missing, a
    /// directory, unreadable or not a 256-bit key stops the node at once, with an error that
    /// names the variable and the file and never shows what the file holds.
    @Test(arguments: ["missing", "directory", "unreadable", "wrong size"])
    func aKeyFileThatCannotBeUsedIsAClearStartupError(_ problem: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-key-file-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var keyFile = directory + "/secret/secure-payload-key"
        let content = "c2hvcnQtc2VjcmV0LWtleQ=="  // 16 bytes in base64: too short
        switch problem {
        case "directory":
            try FileManager.default.createDirectory(atPath: keyFile, withIntermediateDirectories: true)
        case "unreadable" where getuid() == 0:
            // Root reads any file whatever its mode; this one fails to read for anybody.
            keyFile = "/proc/self/mem"
        case "unreadable", "wrong size":
            try FileManager.default.createDirectory(atPath: directory + "/secret", withIntermediateDirectories: true)
            let bytes = problem == "wrong size" ? Data(content.utf8) : Data(repeating: 7, count: 32)
            let mode = problem == "wrong size" ? 0o600 : 0o000
            #expect(FileManager.default.createFile(atPath: keyFile, contents: bytes, attributes: [.posixPermissions: mode]))
        default:
            break
        }
        let result = try await HeraldCommand.run(
            ["serve", "--data-dir", directory + "/data", "--port", "0", "--tls-port", "0"],
            environment: ["HERALD_LOG_LEVEL": "error", "HERALD_SECURE_PAYLOAD_KEY_FILE": keyFile],
            limit: .seconds(60)
        )
        #expect(result.status != 0)
        #expect(!result.output.contains("Herald is listening"), "\(result.output)")
        #expect(result.error.contains("HERALD_SECURE_PAYLOAD_KEY_FILE"), "\(result.error)")
        #expect(result.error.contains(keyFile), "\(result.error)")
        #expect(!result.error.contains(content) && !result.output.contains(content), "\(result.error)")
        // Nothing was made in its place, nor in the data directory.
        #expect(!FileManager.default.fileExists(atPath: directory + "/data/keys/secure-payload.key"))
    }

    /// With `HERALD_SECURE_PAYLOAD_KEY_FILE`, the node seals with the key of that file (two
    /// nodes given the same file have the same key) and makes no key in its data directory.
    @Test(.timeLimit(.minutes(2)))
    func aKeyFileGivenInTheEnvironmentIsTheKeyOfEveryNode() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-key-file-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let keyFile = directory + "/secure-payload-key"
        let secret = Data((0..<32).map { UInt8(($0 * 37 + 11) % 256) }).base64EncodedString()
        #expect(FileManager.default.createFile(atPath: keyFile, contents: Data((secret + "\n").utf8), attributes: [.posixPermissions: 0o444]))

        var lines: [String] = []
        for node in ["node1", "node2"] {
            let banner = try await HeraldCommand.runUntil(
                ["serve", "--data-dir", "\(directory)/\(node)", "--port", "0", "--tls-port", "0"],
                environment: ["HERALD_LOG_LEVEL": "error", "HERALD_SECURE_PAYLOAD_KEY_FILE": keyFile, "HERALD_EMULATORS": "off"],
                prints: "Herald is listening"
            )
            let line = try #require(banner.split(separator: "\n").first { $0.contains("secure   payloads sealed") }, "\(banner)")
            #expect(line.contains("(from HERALD_SECURE_PAYLOAD_KEY_FILE)"), "\(line)")
            #expect(!banner.contains(secret))
            #expect(!FileManager.default.fileExists(atPath: "\(directory)/\(node)/keys/secure-payload.key"))
            lines.append(String(line))
        }
        #expect(lines[0] == lines[1])
    }
}
