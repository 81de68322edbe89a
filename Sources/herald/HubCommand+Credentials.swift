import ArgumentParser
import Crypto
import Foundation
import HeraldCore
import HeraldHub
import HeraldTLS

extension HubCommand {
    struct SetCredentials: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-credentials",
            abstract: "Set or clear the push-service credentials a hub delivers with.",
            discussion: """
                Give the options of one or more platforms. A platform set for the first time needs all of its options (the APNs environment defaults to production; without --webpush-vapid-key-file a new VAPID key is made); later, the options given replace only those fields. --clear comes first, so `--clear apns --apns-…` replaces APNs entirely.

                APNs signs in with a token-signing key (--apns-key-file, --apns-key-id, --apns-team-id) or with a certificate (--apns-cert-file: a .p12 with --apns-cert-password, or PEM with its key in the same file or in --apns-cert-key-file), never both: giving a certificate replaces token credentials and the other way round. With a certificate, --apns-topic defaults to the certificate's subject UID (the bundle id Apple puts there). A --apns-cert-password of '-' is read from standard input.

                Everything is checked before anything is saved: the keys must parse, a certificate must open with its password or key and the service account must have project_id, client_email and private_key. A --wns-client-secret of '-' is read from standard input, keeping it out of the shell history.

                Example:  herald hub set-credentials myhub --apns-key-file AuthKey_ABC123DEFG.p8 --apns-key-id ABC123DEFG --apns-team-id TEAM123456 --apns-topic com.example.app --apns-environment sandbox
                Example:  herald hub set-credentials myhub --apns-cert-file apns-production.p12 --apns-cert-password - --apns-environment production
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
        @Option(name: .customLong("apns-cert-file"), help: "APNs certificate instead of a .p8 key: a .p12 file, or PEM.")
        var apnsCertFile: String?
        @Option(name: .customLong("apns-cert-password"), help: "Password of the .p12 certificate ('-' reads it from standard input).")
        var apnsCertPassword: String?
        @Option(name: .customLong("apns-cert-key-file"), help: "PEM private key of a PEM certificate (if not in the certificate's file).")
        var apnsCertKeyFile: String?
        @Option(name: .customLong("apns-topic"), help: "The app's bundle id, the default apns-topic (with a certificate, default: its subject UID).")
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

        @Option(
            name: .customLong("rate-limit"),
            help: ArgumentHelp(
                "A platform credential's send budget: PLATFORM=N/min (or N/s, N/h), or PLATFORM=default (repeatable).",
                valueName: "platform=rate"))
        var rateLimits: [String] = []

        var setsAPNsToken: Bool { [apnsKeyFile, apnsKeyID, apnsTeamID].contains { $0 != nil } }
        var setsAPNsCertificate: Bool { [apnsCertFile, apnsCertPassword, apnsCertKeyFile].contains { $0 != nil } }
        var setsAPNs: Bool { setsAPNsToken || setsAPNsCertificate || apnsTopic != nil || apnsEnvironment != nil }
        var setsWNS: Bool { wnsPackageSID != nil || wnsClientSecret != nil }
        var setsWebPush: Bool { webPushSubject != nil || webPushVAPIDKeyFile != nil }
        var setsCredentials: Bool { setsAPNs || fcmServiceAccount != nil || setsWNS || setsWebPush || !clear.isEmpty }

        /// The `--rate-limit` options: a rate, or `nil` to return to the default, by platform.
        func sendRates() throws -> [Platform: SendRate?] {
            var rates: [Platform: SendRate?] = [:]
            for option in rateLimits {
                let parts = option.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, let platform = Platform(rawValue: parts[0].lowercased()) else {
                    throw ValidationError("--rate-limit \(option): write PLATFORM=N/min, such as fcm=600000/min (platforms: apns, fcm, wns, webpush)")
                }
                do {
                    rates[platform] = parts[1].lowercased() == "default" ? .some(nil) : try SendRate(parsing: parts[1])
                } catch {
                    throw ValidationError("--rate-limit \(option): \(error.message)")
                }
            }
            return rates
        }

        func validate() throws {
            _ = try clearedPlatforms()
            if setsAPNsToken, setsAPNsCertificate {
                throw ValidationError(
                    "APNs signs in with a token-signing key (--apns-key-file, --apns-key-id, --apns-team-id) or a certificate (--apns-cert-…), not both")
            }
            if setsAPNsCertificate, apnsCertFile == nil {
                throw ValidationError("--apns-cert-password and --apns-cert-key-file need --apns-cert-file")
            }
            if wnsClientSecret == "-", apnsCertPassword == "-" {
                throw ValidationError("only one of --wns-client-secret and --apns-cert-password can be read from standard input")
            }
            _ = try sendRates()
            guard setsCredentials || !rateLimits.isEmpty else {
                throw ValidationError(
                    "nothing to change: give a platform's options (--apns-…, --fcm-service-account, --wns-…, --webpush-…), --clear PLATFORM or --rate-limit PLATFORM=N/min"
                )
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
                clientSecret = readLine(strippingNewline: true)?.trimmingSpaces()
                guard clientSecret?.isEmpty == false else {
                    throw HubCommandError("--wns-client-secret -: standard input held no secret")
                }
            }
            let environment = apnsEnvironment?.lowercased()
            let apnsCertificate = try apnsCertificateCredentials()

            let rates = try sendRates()
            try await HubCommand.withCatalog(configuration) { catalog in
                let hub = try await HubCommand.existingHub(name, in: catalog)
                // Credentials first: what they refuse leaves the rates unchanged too.
                if setsCredentials {
                    let updated = try await catalog.setCredentials(name: hub.name) { credentials in
                        for platform in cleared { credentials.clear(platform) }
                        if var certificate = apnsCertificate {
                            // A certificate replaces whatever APNs credentials the hub had.
                            let existing = credentials.apns
                            certificate.environment = environment ?? existing?.environment ?? "production"
                            let uid = (try? certificate.clientCertificate())?.topic
                            guard let topic = apnsTopic ?? uid ?? existing?.topic else {
                                throw HubCommandError(
                                    "the certificate's subject has no UID (bundle id) to take the topic from: give --apns-topic")
                            }
                            certificate.topic = topic
                            credentials.apns = certificate
                        } else if setsAPNs {
                            if var apns = credentials.apns, !(setsAPNsToken && apns.usesCertificate) {
                                if let apnsKey { apns.privateKeyPEM = apnsKey }
                                if let apnsKeyID { apns.keyID = apnsKeyID }
                                if let apnsTeamID { apns.teamID = apnsTeamID }
                                if let apnsTopic { apns.topic = apnsTopic }
                                if let environment { apns.environment = environment }
                                credentials.apns = apns
                            } else {
                                let existing = credentials.apns
                                guard let apnsKey, let apnsKeyID, let apnsTeamID, let topic = apnsTopic ?? existing?.topic else {
                                    throw HubCommandError(
                                        existing == nil
                                            ? "hub \(hub.name) has no APNs credentials yet: give --apns-key-file, --apns-key-id, --apns-team-id and --apns-topic together, or --apns-cert-file"
                                            : "hub \(hub.name) signs in to APNs with a certificate: to use a token-signing key instead give --apns-key-file, --apns-key-id and --apns-team-id together"
                                    )
                                }
                                credentials.apns = .init(
                                    keyID: apnsKeyID, teamID: apnsTeamID, topic: topic,
                                    environment: environment ?? existing?.environment ?? "production", privateKeyPEM: apnsKey)
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
                    print(
                        (["Updated the push credentials of hub \(updated.name):"] + updated.credentials.redactedLines.map { "  " + $0 }).joined(separator: "\n")
                    )
                }
                if !rates.isEmpty {
                    let updated = try await catalog.setSendRates(name: hub.name, rates)
                    for platform in Platform.allCases where rates.keys.contains(platform) {
                        let rate = updated.sendRate(for: platform).map { "at most \($0)" } ?? "without a limit"
                        let source = updated.sendRates[platform] == nil ? " (the default)" : ""
                        print("Hub \(updated.name) sends with its \(platform) credential \(rate)\(source).")
                    }
                }
            }
        }

        /// The certificate options as APNs credentials (topic and environment still to be set);
        /// `nil` without --apns-cert-file. A .p12 and PEM are told apart by the file's contents.
        func apnsCertificateCredentials() throws -> HubCredentials.APNs? {
            guard let apnsCertFile else { return nil }
            guard let data = FileManager.default.contents(atPath: apnsCertFile) else {
                throw HubCommandError("--apns-cert-file: cannot read \(apnsCertFile)")
            }
            if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN ") {
                guard apnsCertPassword == nil else {
                    throw HubCommandError(
                        "--apns-cert-password goes with a .p12 certificate; \(apnsCertFile) is PEM (give its key in the same file or with --apns-cert-key-file)"
                    )
                }
                let key = try apnsCertKeyFile.map { try Self.readFile($0, option: "--apns-cert-key-file") }
                let split = ClientCertificate.splitPEM(text)
                guard let keyPEM = key ?? split.privateKey else {
                    throw HubCommandError("--apns-cert-file: \(apnsCertFile) holds no private key; give it with --apns-cert-key-file")
                }
                return try Self.opened(
                    HubCredentials.APNs(certificatePEM: split.certificates, keyPEM: keyPEM, topic: "", environment: "production"),
                    file: apnsCertFile)
            }
            guard apnsCertKeyFile == nil else {
                throw HubCommandError(
                    "--apns-cert-key-file goes with a PEM certificate; \(apnsCertFile) is a .p12, which holds its key (give --apns-cert-password)")
            }
            var password = apnsCertPassword ?? ""
            if password == "-" {
                password = readLine(strippingNewline: true) ?? ""
            }
            return try Self.opened(
                HubCredentials.APNs(certificatePKCS12: Array(data), password: password, topic: "", environment: "production"),
                file: apnsCertFile)
        }

        /// `credentials`, once its certificate opened with its password or key.
        static func opened(_ credentials: HubCredentials.APNs, file: String) throws -> HubCredentials.APNs {
            do {
                _ = try credentials.clientCertificate()
            } catch {
                throw HubCommandError("--apns-cert-file \(file): \(error.message)")
            }
            return credentials
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
