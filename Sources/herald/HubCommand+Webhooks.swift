import ArgumentParser
import Foundation
import HeraldCore
import HeraldHub
import HeraldPush
import Logging

extension HubCommand {
    struct Webhooks: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "webhooks",
            abstract: "Manage the endpoints a hub posts delivery events to (Standard Webhooks, signed).",
            discussion: """
                Event types: \(WebhookEventType.subscribable.map(\.rawValue).joined(separator: ", ")) (or * for all).
                Examples:  herald hub webhooks add myhub https://api.example.com/herald-events --events notification.completed,registration.expired
                           herald hub webhooks list myhub      herald hub webhooks log myhub we_…      herald hub webhooks test myhub we_…
                """,
            subcommands: [Add.self, List.self, Remove.self, Enable.self, Disable.self, RotateSecret.self, Test.self, Log.self]
        )
    }
}

extension HubCommand.Webhooks {
    /// Runs `body` with an engine on the hub's store whose URL checks are the server's
    /// (HERALD_WEBHOOK_ALLOWED_HOSTS, HERALD_WEBHOOK_HTTP_HOSTS); nothing is posted from here.
    static func withHub<T>(_ name: String, _ common: CommonOptions, _ body: (HubEngine) async throws -> T) async throws -> T {
        let configuration = try common.load()
        let logger = makeLogger("herald", level: configuration.logLevel, format: configuration.logFormat)
        let poster = WebhookPoster(configuration: try configuration.webhookPosterConfiguration())
        do {
            let result = try await HubCommand.withHub(name, configuration) { engine, _ in
                var settings = engine.configuration
                settings.webhookPoster = poster
                return try await body(HubEngine(store: engine.store, providers: [], configuration: settings, logger: logger))
            }
            try? await poster.shutdown()
            return result
        } catch let error as HeraldError {
            try? await poster.shutdown()
            throw HubCommandError(error)
        } catch {
            try? await poster.shutdown()
            throw error
        }
    }

    static func describe(_ endpoint: WebhookEndpoint, pending: Int?) -> String {
        var line =
            "\(endpoint.id)  \(endpoint.enabled ? "enabled " : "DISABLED")  \(endpoint.url.absoluteString)  "
            + endpoint.events.sorted().map(\.rawValue).joined(separator: ",")
        if let pending { line += "  (\(pending) waiting)" }
        if let reason = endpoint.disabledReason { line += "\n    disabled: \(reason)" }
        if let until = endpoint.previousSecretExpiresAt, until > Date() {
            line += "\n    the previous secret signs too until \(until.formatted(.iso8601))"
        }
        return line
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add an endpoint; prints its signing secret once.",
            discussion: "https only, unless the host is in HERALD_WEBHOOK_HTTP_HOSTS (a local receiver)."
        )
        @OptionGroup var common: CommonOptions
        @Argument(help: "The hub.") var hub: String
        @Argument(help: "The endpoint's URL.") var url: String
        @Option(help: "Comma-separated event types, or * for all.") var events: String = "*"
        @Option(help: "A secret of your own (whsec_<base64>); default: a new random one.") var secret: String?

        func run() async throws {
            let endpoint = try await HubCommand.Webhooks.withHub(hub, common) { engine in
                try await engine.addWebhookEndpoint(url: url, events: events.split(separator: ",").map(String.init), secret: secret)
            }
            print(HubCommand.Webhooks.describe(endpoint, pending: nil))
            print("Signing secret (shown once; keep it with the receiver): \(endpoint.secret.text)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the endpoints (without secrets).")
        @OptionGroup var common: CommonOptions
        @Argument(help: "The hub.") var hub: String

        func run() async throws {
            let lines = try await HubCommand.Webhooks.withHub(hub, common) { engine in
                var lines: [String] = []
                for endpoint in try await engine.webhookEndpoints() {
                    lines.append(HubCommand.Webhooks.describe(endpoint, pending: try await engine.pendingWebhookDeliveries(endpointID: endpoint.id)))
                }
                return lines
            }
            print(lines.isEmpty ? "Hub \(hub) has no webhook endpoints." : lines.joined(separator: "\n"))
        }
    }

    /// What every command about one endpoint names: the storage, the hub and the endpoint.
    struct EndpointOptions: ParsableArguments {
        @OptionGroup var common: CommonOptions
        @Argument(help: "The hub.") var hub: String
        @Argument(help: "The endpoint's id.") var id: String

        /// ``HubCommand/Webhooks/withHub(_:_:_:)`` for this endpoint's hub.
        func withHub<T>(_ body: (HubEngine) async throws -> T) async throws -> T {
            try await HubCommand.Webhooks.withHub(hub, common, body)
        }

        /// Enables or disables the endpoint and prints it.
        func setEnabled(_ enabled: Bool) async throws {
            let endpoint = try await withHub { engine in try await engine.setWebhookEndpointEnabled(id: id, enabled: enabled) }
            print(HubCommand.Webhooks.describe(endpoint, pending: nil))
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an endpoint, its waiting events and its delivery log.")
        @OptionGroup var endpoint: EndpointOptions

        func run() async throws {
            try await endpoint.withHub { engine in try await engine.removeWebhookEndpoint(id: endpoint.id) }
            print("Removed webhook endpoint \(endpoint.id).")
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enable an endpoint (one disabled after failing for 24 hours, say).")
        @OptionGroup var endpoint: EndpointOptions

        func run() async throws { try await endpoint.setEnabled(true) }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Disable an endpoint: it gets no events, and those waiting are dropped.")
        @OptionGroup var endpoint: EndpointOptions

        func run() async throws { try await endpoint.setEnabled(false) }
    }

    struct RotateSecret: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-secret",
            abstract: "Give an endpoint a new secret; prints it once. The previous one keeps signing for a while."
        )
        @OptionGroup var endpoint: EndpointOptions
        @Option(name: .customLong("previous-valid-for"), help: "Seconds the previous secret keeps signing: 0 to 604800 (default 86400).")
        var previousValidFor: Int64 = 86_400

        func run() async throws {
            let rotated = try await endpoint.withHub { engine in
                try await engine.rotateWebhookSecret(id: endpoint.id, previousValidFor: .seconds(previousValidFor))
            }
            print(HubCommand.Webhooks.describe(rotated, pending: nil))
            print("New signing secret (shown once): \(rotated.secret.text)")
        }
    }

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Record a webhook.test event for an endpoint; a running node posts it within a second."
        )
        @OptionGroup var endpoint: EndpointOptions

        func run() async throws {
            let event = try await endpoint.withHub { engine in try await engine.sendTestWebhookEvent(endpointID: endpoint.id) }
            print("Recorded test event \(event.id) for \(endpoint.id); `herald hub webhooks log \(endpoint.hub) \(endpoint.id)` shows how it went.")
        }
    }

    struct Log: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show an endpoint's latest delivery attempts, newest first.")
        @OptionGroup var endpoint: EndpointOptions
        @Option(help: "How many attempts (1 to 1000).") var limit: Int = 50

        func validate() throws {
            guard (1...1000).contains(limit) else { throw ValidationError("--limit is 1 to 1000") }
        }

        func run() async throws {
            let attempts = try await endpoint.withHub { engine in try await engine.webhookAttempts(endpointID: endpoint.id, limit: limit) }
            if attempts.isEmpty { print("No attempts yet.") }
            for attempt in attempts {
                let status = attempt.statusCode.map(String.init) ?? "---"
                print(
                    "\(attempt.at.formatted(.iso8601))  \(attempt.outcome.rawValue)  \(status)  \(attempt.type.rawValue)  \(attempt.eventID)  "
                        + "attempt \(attempt.attempt), \(attempt.durationMilliseconds) ms" + (attempt.error.map { "  \($0)" } ?? "")
                )
            }
        }
    }
}
