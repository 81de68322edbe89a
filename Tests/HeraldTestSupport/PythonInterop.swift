public import Foundation
import Subprocess
import SystemPackage

/// Runs the Python scripts in `Tests/Interop`, which drive Herald with independent
/// implementations from PyPI.
///
/// Child processes are started with swift-subprocess rather than Foundation's `Process`: on
/// Linux, `Process.run()` reads past a buffer while it lists `/proc/self/fd`, and a test
/// process with many sockets open crashes there now and then.
public enum PythonInterop {
    /// `Tests/Interop`.
    public static let scripts = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Interop")

    /// The most either stream of a script may print; more is an error.
    static let outputLimit = 4 << 20

    /// What a script printed, and how it ended.
    public struct Output: Sendable {
        /// The exit code; a script killed by a signal reports `128 + signal`, as a shell does.
        public var status: Int32
        public var stdout: String
        public var stderr: String

        /// Both streams, for a failure message.
        public var transcript: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
    }

    /// Whether `python3` can import every one of `modules` (comma-separated, as in an
    /// `import` statement).
    public static func canImport(_ modules: String) async -> Bool {
        let result = try? await Subprocess.run(
            .name("python3"), arguments: ["-c", "import \(modules)"], output: .discarded, error: .discarded
        )
        return result?.terminationStatus.isSuccess ?? false
    }

    /// Runs `python3 Tests/Interop/<script> arguments…` with `environment` added to this
    /// process's, and waits for it without blocking a thread.
    ///
    /// The scripts choose their CA themselves, so the variables that would point Python's
    /// HTTP clients at another one are removed; no `__pycache__` is left in the source tree.
    public static func run(
        _ script: String, arguments: [String] = [], environment: [String: String] = [:]
    ) async throws -> Output {
        try await run(scriptAt: scripts.appendingPathComponent(script), arguments: arguments, environment: environment)
    }

    /// The repository's `scripts` directory: the scripts that test Herald as a deployment.
    public static let repositoryScripts = scripts.deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts")

    /// Runs `python3 <script> arguments…` as ``run(_:arguments:environment:)`` does, for a
    /// script anywhere.
    public static func run(
        scriptAt script: URL, arguments: [String] = [], environment: [String: String] = [:]
    ) async throws -> Output {
        var variables: [Environment.Key: String?] = [
            "REQUESTS_CA_BUNDLE": nil, "SSL_CERT_FILE": nil, "CURL_CA_BUNDLE": nil, "PYTHONDONTWRITEBYTECODE": "1",
        ]
        for (key, value) in environment { variables[Environment.Key(stringLiteral: key)] = value }
        return try await execute(.name("python3"), arguments: [script.path] + arguments, variables: variables)
    }

    /// Runs a program (not Python: `herald` itself, for tests of its commands) with
    /// `environment` added to this process's, and waits for it without blocking a thread.
    public static func run(
        program: URL, arguments: [String] = [], environment: [String: String] = [:]
    ) async throws -> Output {
        var variables: [Environment.Key: String?] = [:]
        for (key, value) in environment { variables[Environment.Key(stringLiteral: key)] = value }
        return try await execute(.path(FilePath(program.path)), arguments: arguments, variables: variables)
    }

    private static func execute(
        _ executable: Executable, arguments: [String], variables: [Environment.Key: String?]
    ) async throws -> Output {
        let result = try await Subprocess.run(
            executable,
            arguments: Arguments(arguments),
            environment: .inherit.updating(variables),
            output: .string(limit: outputLimit),
            error: .string(limit: outputLimit)
        )
        let status: Int32 =
            switch result.terminationStatus {
            case .exited(let code): code
            case .signaled(let signal): 128 + signal
            }
        return Output(status: status, stdout: result.standardOutput, stderr: result.standardError)
    }

    /// A new, empty temporary directory whose name starts with `prefix`.
    public static func temporaryDirectory(_ prefix: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
