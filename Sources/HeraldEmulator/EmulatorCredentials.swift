public import Crypto
public import Foundation
public import HeraldCore
import HeraldTLS
public import _CryptoExtras

/// Push credentials for the emulators: what `herald serve` uses when no real push credentials
/// are configured. An APNs token-signing key (`AuthKey_<KEYID>.p8`, P-256, PKCS#8 PEM) with its key
/// and team IDs, and an FCM service account (`fcm-service-account.json`, Google's shape, RSA 2048).
///
/// ``loadOrCreate(directory:)`` writes them once and reuses them afterwards; key files have mode
/// 0600. The service-account file has no `token_uri`: the emulator's token URI is only known at
/// run time, so ask ``fcmServiceAccountJSON(tokenURI:)`` for a complete document.
public struct EmulatorCredentials: Sendable {
    public static let apnsMetadataFileName = "apns-key.json"
    public static let fcmServiceAccountFileName = "fcm-service-account.json"

    public let apnsKeyID: String
    public let apnsTeamID: String
    public let apnsPrivateKey: P256.Signing.PrivateKey
    public let fcmProjectID: String
    public let fcmClientEmail: String
    public let fcmPrivateKeyID: String
    public let fcmPrivateKey: _RSA.Signing.PrivateKey
    /// Where the files are, if on disk.
    public let directory: String?

    /// The `.p8` key, PKCS#8 PEM.
    public var apnsPrivateKeyPEM: String { apnsPrivateKey.pemRepresentation }
    /// The service account's `private_key`, PKCS#8 PEM.
    public var fcmPrivateKeyPEM: String { fcmPrivateKey.pkcs8PEMRepresentation }
    /// `AuthKey_<KEYID>.p8`.
    public var apnsKeyFileName: String { "AuthKey_\(apnsKeyID).p8" }
    public var apnsKeyPath: String? { directory.map { ($0 as NSString).appendingPathComponent(apnsKeyFileName) } }
    public var fcmServiceAccountPath: String? {
        directory.map { ($0 as NSString).appendingPathComponent(Self.fcmServiceAccountFileName) }
    }

    /// What the APNs emulator needs to accept tokens signed with ``apnsPrivateKey``.
    public var apnsSigningKey: APNsEmulator.SigningKey {
        APNsEmulator.SigningKey(keyID: apnsKeyID, teamID: apnsTeamID, publicKey: apnsPrivateKey.publicKey)
    }

    /// What the FCM emulator needs to accept assertions signed with ``fcmPrivateKey``.
    public var fcmServiceAccount: FCMEmulator.ServiceAccount {
        FCMEmulator.ServiceAccount(clientEmail: fcmClientEmail, publicKey: fcmPrivateKey.publicKey)
    }

    private struct APNsMetadata: Codable {
        var keyID: String
        var teamID: String
    }

    /// Google's service-account JSON; `token_uri` is filled in only by ``fcmServiceAccountJSON(tokenURI:)``.
    private struct ServiceAccountFile: Codable {
        var type = "service_account"
        var project_id: String
        var private_key_id: String
        var private_key: String
        var client_email: String
        var client_id: String?
        var auth_uri: String?
        var token_uri: String?
        var auth_provider_x509_cert_url: String?
        var client_x509_cert_url: String?
        var universe_domain: String?
    }

    /// Reads the credentials from `directory`, or creates them there (and the directory) the first time.
    public static func loadOrCreate(directory: String) throws -> EmulatorCredentials {
        try SecureFile.ensureDirectory(directory)
        let metadataPath = (directory as NSString).appendingPathComponent(apnsMetadataFileName)
        let accountPath = (directory as NSString).appendingPathComponent(fcmServiceAccountFileName)

        // APNs key.
        let keyID: String
        let teamID: String
        let apnsKey: P256.Signing.PrivateKey
        if let metadataText = try SecureFile.read(metadataPath) {
            guard let metadata = try? JSONDecoder().decode(APNsMetadata.self, from: Data(metadataText.utf8)) else {
                throw HeraldTLSError(code: .invalidPEM, message: "\(metadataPath) is not valid APNs key metadata")
            }
            let keyPath = (directory as NSString).appendingPathComponent("AuthKey_\(metadata.keyID).p8")
            guard let pem = try SecureFile.read(keyPath) else {
                throw HeraldTLSError(code: .keyMismatch, message: "\(metadataPath) names a key file \(keyPath) that does not exist")
            }
            do {
                apnsKey = try P256.Signing.PrivateKey(pemRepresentation: pem)
            } catch {
                throw HeraldTLSError(code: .invalidPEM, message: "\(keyPath) holds no P-256 private key")
            }
            (keyID, teamID) = (metadata.keyID, metadata.teamID)
        } else {
            (keyID, teamID) = (RandomIdentifier.appleID(), RandomIdentifier.appleID())
            apnsKey = P256.Signing.PrivateKey()
            let keyPath = (directory as NSString).appendingPathComponent("AuthKey_\(keyID).p8")
            try SecureFile.write(apnsKey.pemRepresentation, to: keyPath, mode: 0o600)
            try SecureFile.write(try encode(APNsMetadata(keyID: keyID, teamID: teamID)), to: metadataPath, mode: 0o644)
        }

        // FCM service account.
        let account: ServiceAccountFile
        let rsaKey: _RSA.Signing.PrivateKey
        if let accountText = try SecureFile.read(accountPath) {
            guard let decoded = try? JSONDecoder().decode(ServiceAccountFile.self, from: Data(accountText.utf8)) else {
                throw HeraldTLSError(code: .invalidPEM, message: "\(accountPath) is not a service-account JSON file")
            }
            do {
                rsaKey = try _RSA.Signing.PrivateKey(pemRepresentation: decoded.private_key)
            } catch {
                throw HeraldTLSError(code: .invalidPEM, message: "\(accountPath) holds no usable RSA private key")
            }
            account = decoded
        } else {
            rsaKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            account = makeServiceAccount(privateKey: rsaKey)
            try SecureFile.write(try encode(account), to: accountPath, mode: 0o600)
        }

        return EmulatorCredentials(
            apnsKeyID: keyID,
            apnsTeamID: teamID,
            apnsPrivateKey: apnsKey,
            fcmProjectID: account.project_id,
            fcmClientEmail: account.client_email,
            fcmPrivateKeyID: account.private_key_id,
            fcmPrivateKey: rsaKey,
            directory: directory
        )
    }

    /// Fresh credentials in memory only, for tests.
    public static func makeEphemeral() throws -> EmulatorCredentials {
        let rsaKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let account = makeServiceAccount(privateKey: rsaKey)
        return EmulatorCredentials(
            apnsKeyID: RandomIdentifier.appleID(),
            apnsTeamID: RandomIdentifier.appleID(),
            apnsPrivateKey: P256.Signing.PrivateKey(),
            fcmProjectID: account.project_id,
            fcmClientEmail: account.client_email,
            fcmPrivateKeyID: account.private_key_id,
            fcmPrivateKey: rsaKey,
            directory: nil
        )
    }

    /// The service account as Google's JSON, with `token_uri` set to `tokenURI` (the FCM emulator's
    /// ``FCMEmulator/tokenURI``).
    public func fcmServiceAccountJSON(tokenURI: String) throws -> Data {
        var account = ServiceAccountFile(
            project_id: fcmProjectID,
            private_key_id: fcmPrivateKeyID,
            private_key: fcmPrivateKeyPEM,
            client_email: fcmClientEmail
        )
        account.token_uri = tokenURI
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(account)
    }

    private static func makeServiceAccount(privateKey: _RSA.Signing.PrivateKey) -> ServiceAccountFile {
        let projectID = "herald-emulator"
        let email = "herald-emulator@\(projectID).iam.gserviceaccount.com"
        var clientID = String(UInt64.random(in: 100_000_000_000_000_000...999_999_999_999_999_999))
        clientID += String(Int.random(in: 100...999))
        return ServiceAccountFile(
            project_id: projectID,
            private_key_id: RandomIdentifier.hex(byteCount: 20),
            private_key: privateKey.pkcs8PEMRepresentation,
            client_email: email,
            client_id: clientID,
            auth_uri: nil,
            token_uri: nil,
            auth_provider_x509_cert_url: nil,
            client_x509_cert_url: nil,
            universe_domain: "googleapis.com"
        )
    }

    private static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self) + "\n"
    }
}

extension EmulatorCredentials {
    /// A WNS package SID (`ms-app://s-1-15-2-…`) for the WNS emulator, derived from the FCM key so
    /// that it stays the same as long as the credentials directory does.
    public var wnsPackageSID: String {
        let digest = wnsDerived("herald.emulator.wns.package-sid")
        let parts = stride(from: 0, to: 28, by: 4).map { offset in
            digest[offset..<offset + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
        return "ms-app://s-1-15-2-" + parts.map(String.init).joined(separator: "-")
    }

    /// The client secret that goes with ``wnsPackageSID``: 32 base64 characters, derived from the
    /// FCM key like the SID.
    public var wnsClientSecret: String {
        Data(wnsDerived("herald.emulator.wns.client-secret").prefix(24)).base64EncodedString()
    }

    /// What the WNS emulator needs to issue access tokens for ``wnsPackageSID``.
    public var wnsApp: WNSEmulator.App {
        WNSEmulator.App(clientID: wnsPackageSID, clientSecret: wnsClientSecret)
    }

    /// HMAC-SHA256 of `label` under a key derived from the FCM private key.
    private func wnsDerived(_ label: String) -> [UInt8] {
        let key = SymmetricKey(data: SHA256.hash(data: fcmPrivateKey.derRepresentation))
        return Array(HMAC<SHA256>.authenticationCode(for: Data(label.utf8), using: key))
    }
}

extension EmulatorCredentials: SecretRedacting {
    /// The ids and the directory, with both private keys redacted.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "apnsKeyID": apnsKeyID, "apnsTeamID": apnsTeamID, "apnsPrivateKey": Self.redacted,
                "fcmProjectID": fcmProjectID, "fcmClientEmail": fcmClientEmail, "fcmPrivateKeyID": fcmPrivateKeyID,
                "fcmPrivateKey": Self.redacted, "directory": directory as Any,
            ])
    }
}
