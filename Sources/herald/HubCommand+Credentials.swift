import ArgumentParser
import Crypto
import Foundation
import HeraldCore
import HeraldHub

extension HubCommand {
    struct SetCredentials: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-credentials",
            abstract: "Set or clear the push-service credentials a hub delivers with.",
            discussion: """
                Give the options of one or more platforms. A platform set for the first time needs all of its options (the APNs environment defaults to production; without --webpush-vapid-key-file a new VAPID key is made); later, the options given replace only those fields. --clear comes first, so `--clear apns --apns-…` replaces APNs entirely.

                Everything is checked before anything is saved: the keys must parse and the service account must have project_id, client_email and private_key. A --wns-client-secret of '-' is read from standard input, keeping it out of the shell history.

                Example:  herald hub set-credentials myhub --apns-key-file AuthKey_ABC123DEFG.p8 --apns-key-id ABC123DEFG --apns-team-id TEAM123456 --apns-topic com.example.app --apns-environment sandbox
                """
        )

        @OptionGroup var common: CommonOptions

        @Argument(help: "The hub.")
        var name: String

        @Option(name: .customLong("apns-key-file"), help: "APNs token-auth key (.p8 file).")
        var apnsKeyFile: String?
        @Option(name: .customLong("apns-key-id"), help: "Its key id (10 characters).")
        var apnsKeyID: String?
        @Option(name: .customLong("apns-team-id"), help: "Apple developer team id (10 characters).")
        var apnsTeamID: String?
        @Option(name: .customLong("apns-topic"), help: "The app's bundle id, the default apns-topic.")
        var apnsTopic: String?
        @Option(name: .customLong("apns-environment"), help: "production or sandbox (default production).")
        var apnsEnvironment: String?

        @Option(name: .customLong("fcm-service-account"), help: "Firebase service-account key file (JSON).")
        var fcmServiceAccount: String?

        @Option(name: .customLong("wns-package-sid"), help: "WNS package SID of the Windows app.")
        var wnsPackageSID: String?
        @Option(name: .customLong("wns-client-secret"), help: "WNS client secret ('-' reads it from standard input).")
        var wnsClientSecret: String?

        @Option(name: .customLong("webpush-subject"), help: "VAPID contact: mailto:… or https:….")
        var webPushSubject: String?
        @Option(name: .customLong("webpush-vapid-key-file"), help: "VAPID private key (P-256, PEM).")
        var webPushVAPIDKeyFile: String?

        @Option(name: .customLong("clear"), help: "Remove a platform's credentials: apns, fcm, wns or webpush (repeatable).")
        var clear: [String] = []

        var setsAPNs: Bool { [apnsKeyFile, apnsKeyID, apnsTeamID, apnsTopic, apnsEnvironment].contains { $0 != nil } }
        var setsWNS: Bool { wnsPackageSID != nil || wnsClientSecret != nil }
        var setsWebPush: Bool { webPushSubject != nil || webPushVAPIDKeyFile != nil }

        func validate() throws {
            _ = try clearedPlatforms()
            guard setsAPNs || fcmServiceAccount != nil || setsWNS || setsWebPush || !clear.isEmpty else {
                throw ValidationError("nothing to change: give a platform's options (--apns-…, --fcm-service-account, --wns-…, --webpush-…) or --clear PLATFORM")
            }
        }

        func run() async throws {
            let configuration = try common.load()
            let cleared = try clearedPlatforms()
            // Read every file before changing anything.
            let apnsKey = try apnsKeyFile.map { try Self.readFile($0, option: "--apns-key-file") }
            let serviceAccount = try fcmServiceAccount.map { try Self.readFile($0, option: "--fcm-service-account") }
            let vapidKey = try webPushVAPIDKeyFile.map { try Self.readFile($0, option: "--webpush-vapid-key-file") }
            var clientSecret = wnsClientSecret
            if clientSecret == "-" {
                clientSecret = readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces)
                guard clientSecret?.isEmpty == false else {
                    throw HubCommandError("--wns-client-secret -: standard input held no secret")
                }
            }
            let environment = apnsEnvironment?.lowercased()

            try await HubCommand.withCatalog(configuration) { catalog in
                let hub = try await HubCommand.existingHub(name, in: catalog)
                let updated = try await catalog.setCredentials(name: hub.name) { credentials in
                    for platform in cleared { credentials.clear(platform) }
                    if setsAPNs {
                        if var apns = credentials.apns {
                            if let apnsKey { apns.privateKeyPEM = apnsKey }
                            if let apnsKeyID { apns.keyID = apnsKeyID }
                            if let apnsTeamID { apns.teamID = apnsTeamID }
                            if let apnsTopic { apns.topic = apnsTopic }
                            if let environment { apns.environment = environment }
                            credentials.apns = apns
                        } else {
                            guard let apnsKey, let apnsKeyID, let apnsTeamID, let apnsTopic else {
                                throw HubCommandError(
                                    "hub \(hub.name) has no APNs credentials yet: give --apns-key-file, --apns-key-id, --apns-team-id and --apns-topic together")
                            }
                            credentials.apns = .init(
                                keyID: apnsKeyID, teamID: apnsTeamID, topic: apnsTopic,
                                environment: environment ?? "production", privateKeyPEM: apnsKey)
                        }
                    }
                    if let serviceAccount {
                        credentials.fcm = .init(serviceAccountJSON: serviceAccount)
                    }
                    if setsWNS {
                        if var wns = credentials.wns {
                            if let wnsPackageSID { wns.packageSID = wnsPackageSID }
                            if let clientSecret { wns.clientSecret = clientSecret }
                            credentials.wns = wns
                        } else {
                            guard let wnsPackageSID, let clientSecret else {
                                throw HubCommandError("hub \(hub.name) has no WNS credentials yet: give --wns-package-sid and --wns-client-secret together")
                            }
                            credentials.wns = .init(packageSID: wnsPackageSID, clientSecret: clientSecret)
                        }
                    }
                    if setsWebPush {
                        if var webPush = credentials.webPush {
                            if let webPushSubject { webPush.subject = webPushSubject }
                            if let vapidKey { webPush.vapidPrivateKeyPEM = vapidKey }
                            credentials.webPush = webPush
                        } else {
                            guard let webPushSubject else {
                                throw HubCommandError("hub \(hub.name) has no Web Push credentials yet: give --webpush-subject (mailto:… or https:…)")
                            }
                            credentials.webPush = .init(
                                subject: webPushSubject,
                                vapidPrivateKeyPEM: vapidKey ?? P256.Signing.PrivateKey().pemRepresentation)
                        }
                    }
                }
                print((["Updated the push credentials of hub \(updated.name):"] + updated.credentials.redactedLines.map { "  " + $0 }).joined(separator: "\n"))
            }
        }

        func clearedPlatforms() throws -> [Platform] {
            try clear.map { text throws -> Platform in
                do {
                    return try Platform(parsing: text)
                } catch let error as HeraldError {
                    throw ValidationError("--clear: \(error.message)")
                }
            }
        }

        static func readFile(_ path: String, option: String) throws -> String {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw HubCommandError("\(option): cannot read \(path)")
            }
            guard let text = String(data: data, encoding: .utf8) else {
                throw HubCommandError("\(option): \(path) is not a text file (expected PEM or JSON)")
            }
            return text
        }
    }

    struct Credentials: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show which push credentials a hub has, without keys or secrets."
        )

        @OptionGroup var common: CommonOptions

        @Argument(help: "The hub.")
        var name: String

        func run() async throws {
            let configuration = try common.load()
            try await HubCommand.withCatalog(configuration) { catalog in
                let hub = try await HubCommand.existingHub(name, in: catalog)
                print(hub.redacted)
            }
        }
    }
}
