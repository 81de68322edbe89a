public import Foundation
public import HeraldCore

/// The fields of a Google service-account key file (`type: service_account`) that the
/// FCM HTTP v1 API needs.
///
/// Printing it never shows the private key.
public struct FCMServiceAccount: Sendable, Hashable, Decodable {
    /// Google's OAuth2 token endpoint, used when the file has no `token_uri`.
    public static let defaultTokenURI = "https://oauth2.googleapis.com/token"

    /// `project_id`: the Firebase project that messages are sent for.
    public var projectID: String
    /// `client_email`: the JWT issuer.
    public var clientEmail: String
    /// `private_key`: PEM RSA private key (PKCS#8).
    public var privateKey: String
    /// `token_uri`: where the signed assertion is exchanged for an access token.
    public var tokenURI: String
    /// `private_key_id`: sent as the JWT `kid` when present.
    public var privateKeyID: String?

    public init(
        projectID: String,
        clientEmail: String,
        privateKey: String,
        tokenURI: String = FCMServiceAccount.defaultTokenURI,
        privateKeyID: String? = nil
    ) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKey = privateKey
        self.tokenURI = tokenURI
        self.privateKeyID = privateKeyID
    }

    enum CodingKeys: String, CodingKey {
        case projectID = "project_id"
        case clientEmail = "client_email"
        case privateKey = "private_key"
        case tokenURI = "token_uri"
        case privateKeyID = "private_key_id"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func required(_ key: CodingKeys) throws -> String {
            let value = try container.decode(String.self, forKey: key)
            guard !value.isEmpty else {
                throw PushProviderError.invalidServiceAccount("the service account's \"\(key.rawValue)\" is empty")
            }
            return value
        }
        self.projectID = try required(.projectID)
        self.clientEmail = try required(.clientEmail)
        self.privateKey = try required(.privateKey)
        self.tokenURI = try container.decodeIfPresent(String.self, forKey: .tokenURI) ?? Self.defaultTokenURI
        self.privateKeyID = try container.decodeIfPresent(String.self, forKey: .privateKeyID)
    }

    /// Reads a service-account JSON file's contents.
    ///
    /// - Throws: ``PushProviderError`` with code `invalidServiceAccount`, naming the missing
    ///   or malformed field; the message never contains the file's contents.
    public init(json: Data) throws {
        do {
            self = try JSONDecoder().decode(FCMServiceAccount.self, from: json)
        } catch let error as PushProviderError {
            throw error
        } catch DecodingError.keyNotFound(let key, _) {
            throw PushProviderError.invalidServiceAccount("the service account JSON has no \"\(key.stringValue)\"")
        } catch DecodingError.valueNotFound(_, let context), DecodingError.typeMismatch(_, let context) {
            let field = context.codingPath.last?.stringValue
            throw PushProviderError.invalidServiceAccount(
                field.map { "the service account's \"\($0)\" must be a string" }
                    ?? "the service account JSON must be an object")
        } catch {
            throw PushProviderError.invalidServiceAccount("the service account is not valid JSON")
        }
    }
}

extension FCMServiceAccount: SecretRedacting {
    /// The fields, with the private key redacted.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "projectID": projectID, "clientEmail": clientEmail, "privateKey": Self.redacted,
                "tokenURI": tokenURI, "privateKeyID": privateKeyID as Any,
            ])
    }
}
