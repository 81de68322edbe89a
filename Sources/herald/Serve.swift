import ArgumentParser
import Foundation
import HeraldServer
import HeraldStore
import Hummingbird
import Logging
import ServiceLifecycle

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the hub: the app backend API, the delivery worker, and emulators where no credentials are set.",
        discussion: HeraldConfiguration.helpText
    )

    @OptionGroup var common: CommonOptions

    @Option(help: "Address to listen on (HERALD_HOST; default 127.0.0.1).")
    var host: String?

    @Option(help: "HTTP port (HERALD_PORT; default 8080).")
    var port: Int?

    @Flag(name: .customLong("insecure-demo-auth"), help: "INSECURE: accept HTTP Basic with user name = password and no account, as the notify-users tutorial does. For demos only.")
    var insecureDemoAuth = false

    func run() async throws {
        var overrides: [String: String] = [:]
        if let host { overrides["HERALD_HOST"] = host }
        if let port { overrides["HERALD_PORT"] = String(port) }
        if insecureDemoAuth { overrides["HERALD_INSECURE_DEMO_AUTH"] = "true" }
        let configuration = try common.load(overrides)
        let logger = makeLogger("herald", level: configuration.logLevel)

        let runtime = try await HeraldRuntime.start(configuration, logger: logger)
        let server = try runtime.serverConfiguration()

        let registrations = try await runtime.store.registrationCount()
        var banner = [
            "Herald is listening on http://\(configuration.host):\(configuration.port)",
            "  data     \(configuration.dataDirectory) (SQLite, \(registrations) registrations)",
            "  secure   payloads sealed with the key \(server.secureKey?.fingerprint ?? "-") (keys/secure-payload.key: back it up apart from the data)",
        ]
        banner += runtime.platformLines.map { "  \($0)" }
        if configuration.insecureDemoAuth {
            banner.append("  WARNING  --insecure-demo-auth is on: anyone can act as any user (Basic with user name = password)")
        }
        if runtime.emulatorDirectory != nil {
            banner.append("  Simulate a device: herald device --server http://\(configuration.host):\(configuration.port) --user alice --password <password> --sign-up")
        }
        print(banner.joined(separator: "\n"))

        let app = buildApplication(hub: runtime.hub, configuration: server, services: runtime.services, logger: logger)
        do {
            try await app.runService()
        } catch {
            await runtime.shutdown()
            throw error
        }
        await runtime.shutdown()
    }
}

func makeLogger(_ label: String, level: Logger.Level) -> Logger {
    var logger = Logger(label: label)
    logger.logLevel = level
    return logger
}
