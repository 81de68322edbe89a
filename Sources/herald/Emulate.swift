import ArgumentParser
import Crypto
import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldTLS
import Logging
import ServiceLifecycle
import UnixSignals

struct Emulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the push-service emulators as a process of their own, for Herald nodes to deliver to.",
        discussion: """
            Starts the emulators of APNs, FCM, WNS and a Web Push service that `herald serve` runs in-process, \
            each on its own port with a certificate of a local CA kept in --data-dir, and prints the HERALD_* \
            settings that point `herald serve` at them (also written to <data-dir>/herald.env, which \
            `set -a; . ./herald-emulator/herald.env; set +a` loads into a shell). Several nodes given these \
            settings deliver to one set of virtual devices, which outlive the nodes.

            Each emulator serves its control API on its own port: POST /_emulator/devices makes a device, \
            GET /_emulator/devices/{token}/notifications shows what it received, POST /_emulator/faults \
            injects errors, GET /_emulator/stats counts accepted sends and the devices reached.

            The APNs emulator also does Live Activities: POST /_emulator/push-to-start-tokens and \
            POST /_emulator/activities make activity tokens, GET /_emulator/activities/{id} shows an activity; \
            its broadcast channel management API (POST/GET/DELETE /1/apps/{bundle id}/channels, \
            GET /1/apps/{bundle id}/all-channels) is on the port of --apns-broadcast-port.

            Example:  herald emulate --apns-port 2197 --open-registry
            """
    )

    // `--directory` is the name it had before: still taken.
    @Option(
        name: [.customLong("data-dir"), .customLong("directory")],
        help: "Where the CA and the emulators' credentials are kept (created if missing).")
    var directory = "./herald-emulator"

    @Option(help: "Address to listen on; the certificates name it too.")
    var host = "127.0.0.1"

    @Option(name: .customLong("apns-port"), help: "APNs emulator port; 0 picks any free port.")
    var apnsPort = 0

    @Option(name: .customLong("apns-broadcast-port"), help: "APNs broadcast channel management API port; 0 picks any free port.")
    var apnsBroadcastPort = 0

    @Option(name: .customLong("fcm-port"), help: "FCM emulator port; 0 picks any free port.")
    var fcmPort = 0

    @Option(name: .customLong("wns-port"), help: "WNS emulator port; 0 picks any free port.")
    var wnsPort = 0

    @Option(name: .customLong("webpush-port"), help: "Web Push service emulator port; 0 picks any free port.")
    var webPushPort = 0

    @Option(help: "The bundle id the APNs emulator's devices belong to.")
    var topic = "com.example.herald-demo"

    @Flag(name: .customLong("open-registry"), help: "Accept any well-formed APNs or FCM device token, registered or not (load tests).")
    var openRegistry = false

    @Option(help: "Payloads kept per device, the newest (every notification is counted).")
    var inbox = 10

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error.")
    var logLevel = "info"

    func validate() throws {
        for (name, port) in [("apns", apnsPort), ("apns-broadcast", apnsBroadcastPort), ("fcm", fcmPort), ("wns", wnsPort), ("webpush", webPushPort)]
        where !(0...65535).contains(port) {
            throw ValidationError("--\(name)-port must be between 0 and 65535, not \(port)")
        }
        guard inbox >= 1 else { throw ValidationError("--inbox must be at least 1") }
    }

    func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel.lowercased()) else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error")
        }
        let logger = makeLogger("herald-emulate", level: level)
        var options = BuiltInEmulators.Options(directory: directory)
        options.host = host
        options.apnsPort = apnsPort
        options.apnsBroadcastPort = apnsBroadcastPort
        options.fcmPort = fcmPort
        options.wnsPort = wnsPort
        options.webPushPort = webPushPort
        options.topic = topic
        options.openDeviceRegistry = openRegistry
        options.inboxLimit = inbox
        // The Web Push emulator needs no VAPID key of its own: a node signs with its own.
        let emulators = try await BuiltInEmulators.start(
            Set(Platform.allCases), options: options, vapidKeyPEM: P256.Signing.PrivateKey().pemRepresentation, logger: logger
        )
        let settings: [(String, String)]
        do {
            settings = try Self.settings(for: emulators, directory: directory, host: host)
            let file = (directory as NSString).appendingPathComponent("herald.env")
            // The file holds the emulators' WNS client secret: owner-only, like their keys.
            let lines = settings.map { "\($0.0)=\($0.1)" } + Self.certificateLines(for: emulators)
            try SecureFile.write(lines.joined(separator: "\n") + "\n", to: file, mode: 0o600)
            print("Herald's push-service emulators are running.")
            for line in Platform.allCases.compactMap({ emulators.lines[$0] }) {
                // The lines `serve` prints, without its reason for starting them.
                print("  " + (line.components(separatedBy: " (").first ?? line))
            }
            print("\nPoint a node at them with these settings (also in \(file)):\n")
            for (name, value) in settings { print("\(name)=\(value)") }
            for line in Self.certificateLines(for: emulators) { print(line) }
            print("\nStop with Ctrl-C; the devices and their counts live as long as this process.")
            fflush(nil)
        } catch {
            await emulators.shutdown()
            throw error
        }
        let group = ServiceGroup(
            configuration: .init(services: emulators.services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        )
        try await group.run()
    }

    /// Comment lines naming the APNs emulator's client certificate and the settings that
    /// sign in with it instead of the token-signing key.
    static func certificateLines(for emulators: BuiltInEmulators) -> [String] {
        guard let certificate = emulators.apnsCertificate else { return [] }
        func absolute(_ path: String) -> String {
            path.hasPrefix("/") ? path : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(path)
        }
        return [
            "",
            "# APNs certificate authentication: the emulator also accepts its client certificate for",
            "# \(certificate.certificate.topic ?? "its topic") (valid until \(ClientCertificate.format(certificate.certificate.notValidAfter))). To sign in with it",
            "# instead of the token-signing key, leave out HERALD_APNS_KEY_FILE, _KEY_ID and _TEAM_ID and set",
            "# HERALD_APNS_CERT_FILE=\(absolute(certificate.pemPath))",
            "# or the .p12 form:",
            "# HERALD_APNS_CERT_FILE=\(absolute(certificate.pkcs12Path))",
            "# HERALD_APNS_CERT_PASSWORD=\(certificate.pkcs12Password)",
        ]
    }

    /// The `HERALD_*` settings that make `herald serve` deliver to `emulators` for every
    /// platform (and start no emulator of its own).
    static func settings(for emulators: BuiltInEmulators, directory: String, host: String) throws -> [(String, String)] {
        guard let apns = emulators.apns, let fcm = emulators.fcm, let wns = emulators.wns, let webPush = emulators.webPush,
            let keys = emulators.keys, let apnsKey = keys.apnsKeyPath, let account = keys.fcmServiceAccountPath,
            let caFile = emulators.authority.certificatePath
        else {
            throw ValidationError("the emulators did not all start")
        }
        func absolute(_ path: String) -> String {
            path.hasPrefix("/") ? path : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(path)
        }
        let ca = absolute(caFile)
        let broadcast = apns.broadcastBaseURL.map { [("HERALD_APNS_BROADCAST_ENDPOINT", $0)] } ?? []
        return [
            ("HERALD_APNS_ENDPOINT", apns.baseURL)
        ] + broadcast + [
            ("HERALD_APNS_KEY_FILE", absolute(apnsKey)),
            ("HERALD_APNS_KEY_ID", keys.apnsKeyID),
            ("HERALD_APNS_TEAM_ID", keys.apnsTeamID),
            ("HERALD_APNS_TOPIC", emulators.credentials.apns?.topic ?? ""),
            ("HERALD_APNS_CA_FILE", ca),
            ("HERALD_FCM_SERVICE_ACCOUNT_FILE", absolute(account)),
            ("HERALD_FCM_ENDPOINT", fcm.baseURL),
            ("HERALD_FCM_TOKEN_URI", fcm.tokenURI),
            ("HERALD_FCM_CA_FILE", ca),
            ("HERALD_WNS_PACKAGE_SID", keys.wnsPackageSID),
            ("HERALD_WNS_CLIENT_SECRET", keys.wnsClientSecret),
            ("HERALD_WNS_TOKEN_URI", wns.tokenURI),
            ("HERALD_WNS_CA_FILE", ca),
            ("HERALD_WNS_ALLOWED_HOSTS", BuiltInEmulators.host(of: wns.baseURL)),
            ("HERALD_WEBPUSH_SUBJECT", "mailto:push@localhost"),
            ("HERALD_WEBPUSH_CA_FILE", ca),
            ("HERALD_WEBPUSH_ALLOWED_HOSTS", BuiltInEmulators.host(of: webPush.baseURL)),
        ]
    }
}
