import ArgumentParser
import Crypto
import Foundation
import HeraldCore
import HeraldHub
import HeraldServer
import HeraldStore
import Logging

struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a notification to the devices a tag expression targets.",
        discussion: """
            Writes the notification into a hub's queue in the data directory (or the database of \
            --database-url), where a `herald serve` running on it delivers it, and shows its progress and outcome. The hub is the \
            app backend's (HERALD_APP_HUB_NAME, default app) unless --hub names another.
            Example:  herald send --to 'sports && !muted' --message 'Kick-off in 5 minutes'

            A Live Activity push (APNs only, to push-to-start or activity update tokens):
              herald send --to match-42 --live-activity update --content-state '{"home":2,"away":1}'
              herald send --to fans-lions --live-activity start --attributes-type MatchAttributes \
                --attributes '{"homeTeam":"Lions"}' --content-state '{"home":0,"away":0}' --message 'Kick-off'
              herald send --to match-42 --live-activity end --dismiss-in 900
            """
    )

    @Option(help: "The hub to send through (default: the app backend's hub).")
    var hub: String?

    @OptionGroup var common: CommonOptions

    @Option(help: "Tag expression, e.g. 'username:alice' or 'sports && (uk || fr)'. Omit with --broadcast.")
    var to: String?

    @Flag(help: "Send to every registration.")
    var broadcast = false

    @Option(help: "The text to show (for --live-activity, the alert; required to start one).")
    var message: String?

    @Option(help: "A title above the text.")
    var title: String?

    @Option(help: "Comma-separated platforms (default apns,fcm,wns,webpush).")
    var platforms: String = "apns,fcm,wns,webpush"

    @Option(help: "Seconds to wait for the outcome.")
    var wait: Double = 60

    @Option(help: "Delivery priority: high, normal or low (default: APNs 10, the others their service's default).")
    var priority: String?

    @Option(help: "Notifications with the same collapse id replace one another on a device that has not shown them yet.")
    var collapseID: String?

    @Option(help: "Seconds the push services keep the notification for a device that is offline.")
    var ttl: Int?

    @Option(
        help:
            "Seconds to spread the sends over, so that the devices get it evenly over that time rather than at once (less than the time a notification is abandoned after, 30 minutes by default)."
    )
    var spread: Int?

    @Option(help: "Send an APNs Live Activity push instead of an alert: start, update or end.")
    var liveActivity: String?

    @Option(help: "With --live-activity: the activity's content state, a JSON object (required for start and update).")
    var contentState: String?

    @Option(help: "With --live-activity start: the name of the activity's ActivityAttributes type.")
    var attributesType: String?

    @Option(help: "With --live-activity start: the activity's attributes, a JSON object.")
    var attributes: String?

    @Option(help: "With --live-activity: seconds from now after which the state is shown as out of date (stale-date).")
    var staleIn: Int?

    @Option(help: "With --live-activity end: seconds from now after which the activity leaves the Lock Screen (dismissal-date).")
    var dismissIn: Int?

    @Option(
        help:
            "Send at most once under this key: run again with the same key and the same options, it shows the first send's notification and sends nothing (kept for the hub's idempotency retention, 24 hours by default)."
    )
    var idempotencyKey: String?

    func validate() throws {
        guard (to != nil) != broadcast else { throw ValidationError("give either --to <tag expression> or --broadcast") }
        if let ttl, ttl < 0 { throw ValidationError("--ttl is a number of seconds, at least 0") }
        if let spread, spread < 1 { throw ValidationError("--spread is a number of seconds, at least 1") }
        if let priority, SendRequest.Priority(rawValue: priority.lowercased()) == nil {
            throw ValidationError("--priority is high, normal or low, not '\(priority)'")
        }
        if let idempotencyKey {
            do {
                try IdempotencyKey.validate(idempotencyKey)
            } catch {
                throw ValidationError("--idempotency-key: 1 to \(IdempotencyKey.maxLength) printable ASCII characters, such as a UUID")
            }
        }
        if let liveActivity {
            guard ["start", "update", "end"].contains(liveActivity) else {
                throw ValidationError("--live-activity is start, update or end, not '\(liveActivity)'")
            }
            for (name, value) in [("--stale-in", staleIn), ("--dismiss-in", dismissIn)] {
                if let value, value < 0 { throw ValidationError("\(name) is a number of seconds, at least 0") }
            }
        } else {
            guard message != nil else { throw ValidationError("--message is required (or --live-activity)") }
            let liveOnly = [
                ("--content-state", contentState), ("--attributes-type", attributesType), ("--attributes", attributes),
                ("--stale-in", staleIn.map(String.init)), ("--dismiss-in", dismissIn.map(String.init)),
            ]
            if let stray = liveOnly.first(where: { $0.1 != nil }) {
                throw ValidationError("\(stray.0) goes with --live-activity")
            }
        }
    }

    /// The send's key, with the digest of what this command sends: the same command run again
    /// is the same send; other options are another send.
    func sendKey(retention: Duration?) throws(HeraldError) -> IdempotencyKey? {
        guard let idempotencyKey else { return nil }
        let parts: [String?] =
            [
                "herald send", to, broadcast ? "broadcast" : nil, message, title, platforms, priority?.lowercased(), collapseID, ttl.map(String.init),
                liveActivity, contentState, attributesType, attributes, staleIn.map(String.init), dismissIn.map(String.init),
            ] + (spread.map { ["spread", String($0)] } ?? [])
        var hash = SHA256()
        for part in parts {
            // Each part length-prefixed, a missing one apart from an empty one.
            let bytes = Array((part ?? "").utf8)
            withUnsafeBytes(of: Int64(part == nil ? -1 : bytes.count).bigEndian) { hash.update(bufferPointer: $0) }
            hash.update(data: bytes)
        }
        let digest = hash.finalize().lowercaseHex
        return try IdempotencyKey(
            idempotencyKey, scope: IdempotencyKey.hubScope, digest: digest, retention: retention ?? IdempotencyKey.defaultRetention
        )
    }

    /// The Live Activity push of `--live-activity`, its `aps` as APNs wants it; the hub checks it.
    private func liveActivityPayload(event: String, now: Date) throws -> PlatformPayload {
        func object(_ text: String?, option: String) throws -> JSONValue? {
            guard let text else { return nil }
            guard let value = try? JSONValue(parsing: text.utf8), case .object = value else {
                throw ValidationError("\(option) must be a JSON object, such as '{\"home\":1}'")
            }
            return value
        }
        let seconds = Int(now.timeIntervalSince1970)
        var aps: [(key: String, value: JSONValue)] = [("timestamp", .number(Double(seconds))), ("event", .string(event))]
        if let state = try object(contentState, option: "--content-state") { aps.append(("content-state", state)) }
        if let staleIn { aps.append(("stale-date", .number(Double(seconds + staleIn)))) }
        if let dismissIn { aps.append(("dismissal-date", .number(Double(seconds + dismissIn)))) }
        if let attributesType { aps.append(("attributes-type", .string(attributesType))) }
        if let attributes = try object(attributes, option: "--attributes") { aps.append(("attributes", attributes)) }
        if let message {
            var alert: [(key: String, value: JSONValue)] = []
            if let title { alert.append(("title", .string(title))) }
            alert.append(("body", .string(message)))
            aps.append(("alert", .object(alert)))
        }
        let body = try JSONEncoder().encode(JSONValue.object([("aps", .object(aps))]))
        return PlatformPayload(
            platform: .apns, body: body,
            headers: [.init(name: "apns-push-type", value: "liveactivity"), .init(name: "apns-priority", value: "10")])
    }

    func run() async throws {
        let configuration = try common.load()
        let logger = makeLogger("herald", level: configuration.logLevel, format: configuration.logFormat)
        let name = self.hub ?? configuration.localAppHubName
        try await configuration.withHubStorage(logger: logger) { storage in
            let catalog = HubCatalog(storage: storage)
            guard let definition = try await catalog.hub(named: name) else {
                if let legacy = catalog.legacyStorePath, FileManager.default.fileExists(atPath: legacy) {
                    throw ValidationError(
                        "the data in \(configuration.dataDirectory) was made by an earlier release: start `herald serve` there once to move it into the hub '\(name)'"
                    )
                }
                let known = ((try? await catalog.list()) ?? []).map(\.name)
                throw ValidationError(
                    known.isEmpty
                        ? "no Herald data in \(configuration.hubLocation); start `herald serve` there first, or pass --data-dir or --database-url"
                        : "no hub '\(name)' in \(configuration.hubLocation); its hubs: \(known.joined(separator: ", "))"
                )
            }
            let store = try await storage.openStore(forHub: definition.name, logger: logger)
            do {
                try await send(
                    through: HubEngine(store: store, providers: [], logger: logger), configuration: configuration,
                    retention: definition.idempotencyRetention
                )
            } catch {
                try? await store.close()
                throw error
            }
            try await store.close()
        }
    }

    private func send(through engine: HubEngine, configuration: HeraldConfiguration, retention: Duration?) async throws {
        let record: NotificationRecord
        let replayed: Bool
        do {
            let platforms = try self.platforms.split(separator: ",").map { try Platform(parsing: String($0)) }
            let tags = try to.map { text throws(TagExpressionSyntaxError) in try SendRequest.Tags(parsing: text) }
            let options = SendRequest.Options(
                timeToLive: ttl.map { .seconds($0) }, priority: try priority.map { text throws(HeraldError) in try SendRequest.Priority(parsing: text) },
                collapseID: collapseID, idempotencyKey: try sendKey(retention: retention), spread: spread.map { .seconds($0) })
            let payloads: [PlatformPayload]
            if let liveActivity {
                // A Live Activity lives on iOS only: the push goes to the APNs registrations.
                payloads = options.replacingDefaults(in: [try liveActivityPayload(event: liveActivity, now: Date())])
            } else {
                let content = NotificationContent(title: title, body: message ?? "")
                payloads = options.replacingDefaults(in: try platforms.map { try content.payload(for: $0) })
            }
            let request = SendRequest(target: .tags(tags), content: .native(payloads), options: options)
            let result = try await engine.send(request)
            record = result.record
            replayed = result.replay != nil
        } catch let error as HeraldError {
            throw ValidationError(error.message)
        } catch let error as TagExpressionSyntaxError {
            throw ValidationError("invalid tag expression: \(error)")
        } catch let error as StoreError where error.code == .idempotencyKeyReused {
            throw ValidationError(
                "--idempotency-key '\(idempotencyKey ?? "")' was used for a different send (other options or message); "
                    + "run that send exactly to see its notification again, or send this one under a new key"
            )
        }
        if replayed {
            print("already sent under this idempotency key: notification \(record.id) (nothing was sent again)")
        } else {
            print("accepted notification \(record.id)")
        }
        let deadline = Date().addingTimeInterval(wait)
        var hinted = false
        var current = record
        while !current.state.isFinal, Date() < deadline {
            current = try await engine.waitForCompletion(id: record.id, timeout: .seconds(1)) ?? current
            if current.state == .processing {
                print("  processing: \(current.counts.total) devices so far")
            } else if current.state == .enqueued, !hinted, Date().timeIntervalSince(record.enqueuedAt) > 3 {
                print("  still queued: is `herald serve` running on \(configuration.dataDirectory)? It will deliver when it starts.")
                hinted = true
            }
        }
        let view = NotificationSummary(current)
        print("state    \(view.state)")
        print("devices  \(view.targets) (\(view.success) delivered, \(view.failure) failed)")
        for (platform, counts) in current.counts.counts.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            print(
                "  \(platform.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) "
                    + counts.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", "))
        }
    }
}
