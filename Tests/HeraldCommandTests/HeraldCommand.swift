import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The `herald` binary built beside this test bundle, run as a user runs it.
enum HeraldCommand {
    static let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("herald")

    struct Result {
        var status: Int32
        var output: String
        var error: String
    }

    /// Runs `herald arguments…` with `environment` added to this process's (without its
    /// `HERALD_*` settings), and returns what it printed once it exits; stops it (SIGKILL) and
    /// fails after `limit`.
    static func run(_ arguments: [String], environment: [String: String] = [:], limit: Duration = .seconds(300)) async throws -> Result {
        let launched = try launch(arguments, environment: environment)
        defer { try? FileManager.default.removeItem(at: launched.directory) }
        let (process, outputURL, errorURL) = (launched.process, launched.output, launched.error)
        let deadline = ContinuousClock.now + limit
        while process.isRunning {
            if ContinuousClock.now > deadline {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                throw Failure(description: "herald \(arguments.joined(separator: " ")) did not end within \(limit)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return Result(
            status: process.terminationStatus,
            output: (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "",
            error: (try? String(contentsOf: errorURL, encoding: .utf8)) ?? ""
        )
    }

    /// Runs `herald arguments…` as ``run(_:environment:limit:)`` does until its standard output
    /// contains `expected`, then stops it (SIGTERM, then SIGKILL after 10 s) and returns that
    /// output; fails if it exits first or does not print it within `limit`.
    static func runUntil(
        _ arguments: [String], environment: [String: String] = [:], prints expected: String, limit: Duration = .seconds(60)
    ) async throws -> String {
        let launched = try launch(arguments, environment: environment)
        defer { try? FileManager.default.removeItem(at: launched.directory) }
        let (process, outputURL, errorURL) = (launched.process, launched.output, launched.error)
        defer { stop(launched) }
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let output = (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
            if output.contains(expected) { return output }
            guard process.isRunning else {
                let error = (try? String(contentsOf: errorURL, encoding: .utf8)) ?? ""
                throw Failure(
                    description:
                        "herald \(arguments.joined(separator: " ")) exited with status \(process.terminationStatus) before printing '\(expected)': \(error)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw Failure(description: "herald \(arguments.joined(separator: " ")) did not print '\(expected)' within \(limit)")
    }

    /// A `herald` process started with `arguments` and `environment` added to this process's
    /// (without its `HERALD_*` settings), its output going to files in a directory of its own.
    struct Launched {
        var process: Process
        var directory: URL
        var output: URL
        var error: URL

        /// What it printed so far.
        var printed: String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }
        var printedErrors: String { (try? String(contentsOf: error, encoding: .utf8)) ?? "" }
    }

    /// Stops a launched process if it still runs (SIGTERM, then SIGKILL after 10 s).
    static func stop(_ launched: Launched) {
        let process = launched.process
        if process.isRunning {
            process.terminate()
            let stop = ContinuousClock.now + .seconds(10)
            while process.isRunning && ContinuousClock.now < stop { usleep(50_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    /// Starts `herald arguments…` and returns at once; ``stop(_:)`` ends it, and its caller
    /// removes ``Launched/directory``.
    static func launch(_ arguments: [String], environment: [String: String]) throws -> Launched {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-command-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let outputURL = directory.appendingPathComponent("stdout")
        let errorURL = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        merged.merge(environment) { _, new in new }
        process.environment = merged
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
        do {
            try process.run()
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        return Launched(process: process, directory: directory, output: outputURL, error: errorURL)
    }

    /// What went wrong around the command: it did not end in time, or a socket could not be had.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }
}

extension HeraldCommand {
    /// Returns once `launched` printed `text`; throws when it exits first or two minutes pass.
    static func waitUntil(printed text: String, by launched: Launched) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            if launched.printed.contains(text) { return }
            guard launched.process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Failure(description: "never printed '\(text)': \(launched.printed)\n\(launched.printedErrors)")
    }
}
