import Crypto
import Foundation
public import HeraldCore

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

    /// APNs token authentication: a `.p8` signing key and the identifiers that go with it.
    public struct APNs: Codable, Sendable, Hashable, CustomStringConvertible {
        /// The signing key's id (10 characters).
        public var keyID: String
        /// The Apple developer team id (10 characters).
        public var teamID: String
        /// The default `apns-topic`: the app's bundle id.
        public var topic: String
        /// `production` or `sandbox` (the development environment).
        public var environment: String
        /// The signing key, PEM (the contents of the `.p8` file).
        public var privateKeyPEM: String

        public static let environments = ["production", "sandbox"]

        public init(keyID: String, teamID: String, topic: String, environment: String = "production", privateKeyPEM: String) {
            self.keyID = keyID
            self.teamID = teamID
            self.topic = topic
            self.environment = environment
            self.privateKeyPEM = privateKeyPEM
        }

        /// Checks every field; the key must be a P-256 private key in PEM.
        public func validate() throws(HeraldError) {
            try HubCredentials.requireIdentifier(keyID, "the APNs key id", length: 10)
            try HubCredentials.requireIdentifier(teamID, "the APNs team id", length: 10)
            let topicCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
            guard !topic.isEmpty, topic.allSatisfy(topicCharacters.contains) else {
                throw .badRequest("the APNs topic must be the app's bundle id, such as com.example.app, not '\(topic)'")
            }
            guard Self.environments.contains(environment) else {
                throw .badRequest("the APNs environment must be production or sandbox, not '\(environment)'")
            }
            guard (try? P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)) != nil else {
                throw .badRequest("the APNs key is not a PEM P-256 private key (the .p8 file from the Apple developer account)")
            }
        }

        public var description: String {
            "key \(keyID), team \(teamID), topic \(topic), \(environment), private key set"
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
