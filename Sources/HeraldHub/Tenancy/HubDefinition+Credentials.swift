import Crypto
public import Foundation
public import HeraldCore
public import HeraldTLS

/// The push-service credentials of one hub, one optional set per platform.
///
/// Printing credentials never shows a private key or a secret: ``redacted`` names what is set
/// and the identifiers that are not secret (key id, team id, project, client email…).
public struct HubCredentials: Codable, Sendable, Hashable, CustomStringConvertible {
    public var apns: APNs?
    public var fcm: FCM?
    public var wns: WNS?
    public var webPush: WebPush?

    public init(apns: APNs? = nil, fcm: FCM? = nil, wns: WNS? = nil, webPush: WebPush? = nil) {
        self.apns = apns
        self.fcm = fcm
        self.wns = wns
        self.webPush = webPush
    }

    /// APNs credentials: token authentication (a `.p8` signing key with its key and team ids)
    /// or certificate authentication (an APNs certificate with its key: a PKCS#12 archive and
    /// its password, or PEM), exactly one of the two.
    ///
    /// Documents written before certificate authentication existed decode unchanged: every
    /// certificate field is optional.
    public struct APNs: Codable, Sendable, Hashable, CustomStringConvertible {
        /// The signing key's id (10 characters); token authentication only.
        public var keyID: String?
        /// The Apple developer team id (10 characters); token authentication only.
        public var teamID: String?
        /// The default `apns-topic`: the app's bundle id.
        public var topic: String
        /// `production` or `sandbox` (the development environment).
        public var environment: String
        /// The signing key, PEM (the contents of the `.p8` file); token authentication only.
        public var privateKeyPEM: String?
        /// The APNs certificate and its key as a PKCS#12 archive (the `.p12` exported from
        /// Keychain Access), base64: the cloud hub's `ApnsCertificate`.
        public var certificatePKCS12: String?
        /// The password of ``certificatePKCS12`` (the cloud hub's `CertificateKey`); empty or
        /// `nil` for none.
        public var certificatePassword: String?
        /// The APNs certificate, PEM (the leaf first, then any intermediates).
        public var certificatePEM: String?
        /// The private key of ``certificatePEM``, PEM (unencrypted).
        public var certificateKeyPEM: String?

        public static let environments = ["production", "sandbox"]

        /// Token authentication.
        public init(keyID: String, teamID: String, topic: String, environment: String = "production", privateKeyPEM: String) {
            self.keyID = keyID
            self.teamID = teamID
            self.topic = topic
            self.environment = environment
            self.privateKeyPEM = privateKeyPEM
        }

        /// Certificate authentication with a PKCS#12 archive (its bytes) and its password.
        public init(certificatePKCS12: [UInt8], password: String, topic: String, environment: String = "production") {
            self.certificatePKCS12 = Data(certificatePKCS12).base64EncodedString()
            self.certificatePassword = password
            self.topic = topic
            self.environment = environment
        }

        /// Certificate authentication with a PEM certificate and its PEM private key.
        public init(certificatePEM: String, keyPEM: String, topic: String, environment: String = "production") {
            self.certificatePEM = certificatePEM
            self.certificateKeyPEM = keyPEM
            self.topic = topic
            self.environment = environment
        }

        /// Whether these are certificate credentials (any certificate field is set).
        public var usesCertificate: Bool {
            certificatePKCS12 != nil || certificatePassword != nil || certificatePEM != nil || certificateKeyPEM != nil
        }

        /// Whether these are token credentials (any token field is set).
        public var usesToken: Bool { keyID != nil || teamID != nil || privateKeyPEM != nil }

        /// The certificate with its key, parsed; `nil` for token credentials.
        /// - Throws: ``HeraldError/badRequest(_:)`` naming what is wrong (never the key or the password).
        public func clientCertificate() throws(HeraldError) -> ClientCertificate? {
            if let pkcs12 = certificatePKCS12 {
                guard let bytes = Data(base64Encoded: pkcs12, options: .ignoreUnknownCharacters), !bytes.isEmpty else {
                    throw .badRequest("the APNs certificate is not base64 of a PKCS#12 (.p12) file")
                }
                do {
                    return try ClientCertificate(pkcs12: Array(bytes), password: certificatePassword ?? "")
                } catch let error as HeraldTLSError where error.code == .invalidPKCS12 {
                    throw .badRequest("the APNs certificate is not a PKCS#12 (.p12) file, or its password is wrong")
                } catch {
                    throw .badRequest("the APNs certificate cannot be used: \(Self.message(error))")
                }
            }
            if let certificatePEM {
                do {
                    return try ClientCertificate(certificatePEM: certificatePEM, privateKeyPEM: certificateKeyPEM)
                } catch {
                    throw .badRequest("the APNs certificate cannot be used: \(Self.message(error))")
                }
            }
            return nil
        }

        private static func message(_ error: any Error) -> String {
            (error as? HeraldTLSError)?.message ?? "it does not parse"
        }

        /// Checks every field: exactly one of token or certificate authentication, complete;
        /// the key must be a P-256 private key in PEM, the certificate must open with its key.
        public func validate() throws(HeraldError) {
            let topicCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
            guard !topic.isEmpty, topic.allSatisfy(topicCharacters.contains) else {
                throw .badRequest("the APNs topic must be the app's bundle id, such as com.example.app, not '\(topic)'")
            }
            guard Self.environments.contains(environment) else {
                throw .badRequest("the APNs environment must be production or sandbox, not '\(environment)'")
            }
            switch (usesToken, usesCertificate) {
            case (true, true):
                throw .badRequest(
                    "APNs credentials use either token authentication (key id, team id, .p8 key) or a certificate, not both")
            case (false, false):
                throw .badRequest("APNs credentials need a token-signing key (.p8, key id, team id) or a certificate")
            case (true, false):
                guard let keyID, let teamID, let privateKeyPEM else {
                    throw .badRequest("APNs token authentication needs the key id, the team id and the .p8 key together")
                }
                try HubCredentials.requireIdentifier(keyID, "the APNs key id", length: 10)
                try HubCredentials.requireIdentifier(teamID, "the APNs team id", length: 10)
                guard (try? P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)) != nil else {
                    throw .badRequest("the APNs key is not a PEM P-256 private key (the .p8 file from the Apple developer account)")
                }
            case (false, true):
                switch (certificatePKCS12 != nil, certificatePEM != nil) {
                case (true, true):
                    throw .badRequest("the APNs certificate is given both as PKCS#12 and as PEM: give one")
                case (false, false):
                    throw .badRequest("an APNs certificate password or key was given without the certificate")
                case (true, false):
                    guard certificateKeyPEM == nil else {
                        throw .badRequest("a PKCS#12 APNs certificate holds its own key: give its password, not a PEM key")
                    }
                case (false, true):
                    guard certificatePassword == nil else {
                        throw .badRequest("a password goes with a PKCS#12 (.p12) APNs certificate, not a PEM one")
                    }
                }
                _ = try clientCertificate()
            }
        }

        public var description: String {
            if usesCertificate {
                let certificate = (try? clientCertificate()).flatMap { $0 }
                let what = certificate.map { "\($0)" } ?? "certificate (unreadable)"
                let form = certificatePKCS12 != nil ? "PKCS#12" : "PEM"
                return "\(what), \(form), topic \(topic), \(environment), private key set"
            }
            return "key \(keyID ?? "?"), team \(teamID ?? "?"), topic \(topic), \(environment), private key set"
        }

        /// When the certificate expires; `nil` for token credentials (or an unreadable certificate).
        public var certificateExpiry: Date? {
            (try? clientCertificate()).flatMap { $0 }?.notValidAfter
        }
    }

    /// FCM HTTP v1: a Google service account.
    public struct FCM: Codable, Sendable, Hashable, CustomStringConvertible {
        /// The service-account key file's contents (JSON).
        public var serviceAccountJSON: String

        public init(serviceAccountJSON: String) {
            self.serviceAccountJSON = serviceAccountJSON
        }

        /// `project_id`, or `nil` if the JSON has none.
        public var projectID: String? { field("project_id") }
        /// `client_email`, or `nil` if the JSON has none.
        public var clientEmail: String? { field("client_email") }

        /// Checks that the JSON is an object with non-empty `project_id`, `client_email` and
        /// `private_key` strings, and that `private_key` is a PEM private key.
        /// Messages never quote the file.
        public func validate() throws(HeraldError) {
            guard let data = serviceAccountJSON.data(using: .utf8),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else {
                throw .badRequest("the FCM service account is not a JSON object (expected the key file downloaded from the Firebase console)")
            }
            for key in ["project_id", "client_email", "private_key"] {
                guard let value = object[key] as? String, !value.isEmpty else {
                    throw .badRequest("the FCM service account has no \"\(key)\" (expected the key file downloaded from the Firebase console)")
                }
            }
            if let type = object["type"] as? String, type != "service_account" {
                throw .badRequest("the FCM service account file has type \"\(type)\"; expected \"service_account\"")
            }
            guard let key = object["private_key"] as? String,
                HubCredentials.pemBody(key, labels: ["PRIVATE KEY", "RSA PRIVATE KEY"]) != nil
            else {
                throw .badRequest("the FCM service account's \"private_key\" is not a PEM private key")
            }
        }

        public var description: String {
            "project \(projectID ?? "?"), client \(clientEmail ?? "?"), private key set"
        }

        private func field(_ key: String) -> String? {
            guard let data = serviceAccountJSON.data(using: .utf8),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else { return nil }
            return object[key] as? String
        }
    }

    /// WNS: the Windows app's package SID and client secret.
    public struct WNS: Codable, Sendable, Hashable, CustomStringConvertible {
        public var packageSID: String
        public var clientSecret: String

        public init(packageSID: String, clientSecret: String) {
            self.packageSID = packageSID
            self.clientSecret = clientSecret
        }

        public func validate() throws(HeraldError) {
            guard !packageSID.isEmpty, !packageSID.contains(where: \.isWhitespace) else {
                throw .badRequest("the WNS package SID must be the app's package SID, such as ms-app://s-1-15-2-…, with no spaces")
            }
            guard !clientSecret.isEmpty, !clientSecret.contains(where: \.isNewline) else {
                throw .badRequest("the WNS client secret is empty or spans several lines")
            }
        }

        public var description: String {
            "package \(packageSID), client secret set (\(clientSecret.count) characters)"
        }
    }

    /// Web Push: the VAPID contact and signing key (RFC 8292).
    public struct WebPush: Codable, Sendable, Hashable, CustomStringConvertible {
        /// The contact the push services see: `mailto:…` or `https:…`.
        public var subject: String
        /// The VAPID private key (P-256), PEM.
        public var vapidPrivateKeyPEM: String

        public init(subject: String, vapidPrivateKeyPEM: String) {
            self.subject = subject
            self.vapidPrivateKeyPEM = vapidPrivateKeyPEM
        }

        /// The application server key web apps pass to `pushManager.subscribe`: the public
        /// key, uncompressed, base64url. `nil` if the private key does not parse.
        public var applicationServerKey: String? {
            guard let key = try? P256.Signing.PrivateKey(pemRepresentation: vapidPrivateKeyPEM) else { return nil }
            return key.publicKey.x963Representation.base64EncodedString()
                .replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }

        public func validate() throws(HeraldError) {
            guard subject.hasPrefix("mailto:") || subject.hasPrefix("https:"), subject.count > "https:".count else {
                throw .badRequest("the Web Push subject must be a contact starting with mailto: or https:, not '\(subject)'")
            }
            guard applicationServerKey != nil else {
                throw .badRequest("the VAPID key is not a PEM P-256 private key")
            }
        }

        public var description: String {
            "subject \(subject), VAPID public key \(applicationServerKey ?? "?"), private key set"
        }
    }

    /// Removes the credentials of `platform`.
    public mutating func clear(_ platform: Platform) {
        switch platform {
        case .apns: apns = nil
        case .fcm: fcm = nil
        case .wns: wns = nil
        case .webpush: webPush = nil
        }
    }

    /// Whether `platform` has credentials.
    public func isConfigured(_ platform: Platform) -> Bool {
        switch platform {
        case .apns: apns != nil
        case .fcm: fcm != nil
        case .wns: wns != nil
        case .webpush: webPush != nil
        }
    }

    /// Checks every credential that is set.
    public func validate() throws(HeraldError) {
        try apns?.validate()
        try fcm?.validate()
        try wns?.validate()
        try webPush?.validate()
    }

    /// One line per platform, secrets left out.
    public var redactedLines: [String] {
        [
            "apns     " + (apns?.description ?? "not set"),
            "fcm      " + (fcm?.description ?? "not set"),
            "wns      " + (wns?.description ?? "not set"),
            "webpush  " + (webPush?.description ?? "not set"),
        ]
    }

    /// What is set, without secrets, one platform a line.
    public var redacted: String { redactedLines.joined(separator: "\n") }

    public var description: String { redacted }

    // MARK: Helpers

    static func requireIdentifier(_ value: String, _ what: String, length: Int) throws(HeraldError) {
        guard value.count == length, value.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) || ("a"..."z").contains($0) || ("0"..."9").contains($0) })
        else {
            throw .badRequest("\(what) must be \(length) letters or digits, not '\(value)'")
        }
    }

    /// The DER bytes of the first PEM block with one of `labels`, or `nil`.
    static func pemBody(_ pem: String, labels: [String]) -> Data? {
        for label in labels {
            let begin = "-----BEGIN \(label)-----"
            let end = "-----END \(label)-----"
            guard let start = pem.range(of: begin), let stop = pem.range(of: end, range: start.upperBound..<pem.endIndex) else {
                continue
            }
            let body = pem[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
            if let data = Data(base64Encoded: String(body)), !data.isEmpty { return data }
        }
        return nil
    }
}
