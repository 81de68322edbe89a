import Foundation
import HeraldCore
import Testing

@testable import HeraldPush

@Suite struct FCMServiceAccountTests {
    static let secret = "-----BEGIN PRIVATE KEY-----\nTOPSECRETKEYMATERIAL\n-----END PRIVATE KEY-----\n"

    static func json(dropping field: String? = nil, replacing: (String, Any)? = nil) throws -> Data {
        var object: [String: Any] = [
            "type": "service_account",
            "project_id": "herald-demo",
            "private_key_id": "abc123",
            "private_key": secret,
            "client_email": "push@herald-demo.iam.gserviceaccount.com",
            "client_id": "1234567890",
            "token_uri": "https://oauth2.googleapis.com/token",
        ]
        if let field { object.removeValue(forKey: field) }
        if let (key, value) = replacing { object[key] = value }
        return try JSONSerialization.data(withJSONObject: object)
    }

    @Test func parsesGooglesShape() throws {
        let account = try FCMServiceAccount(json: Self.json())
        #expect(account.projectID == "herald-demo")
        #expect(account.clientEmail == "push@herald-demo.iam.gserviceaccount.com")
        #expect(account.privateKey == Self.secret)
        #expect(account.tokenURI == "https://oauth2.googleapis.com/token")
        #expect(account.privateKeyID == "abc123")
    }

    @Test func optionalFieldsHaveDefaults() throws {
        let account = try FCMServiceAccount(json: Self.json(dropping: "token_uri"))
        #expect(account.tokenURI == FCMServiceAccount.defaultTokenURI)
        #expect(try FCMServiceAccount(json: Self.json(dropping: "private_key_id")).privateKeyID == nil)
    }

    @Test(arguments: ["project_id", "client_email", "private_key"])
    func missingFieldIsNamed(_ field: String) throws {
        let error = try #require(throws: PushProviderError.self) { try FCMServiceAccount(json: Self.json(dropping: field)) }
        #expect(error.code == .invalidServiceAccount)
        #expect(error.message.contains("\"\(field)\""))
        #expect(!error.description.contains("TOPSECRET"))
    }

    @Test(arguments: ["project_id", "client_email", "private_key"])
    func wrongTypeIsNamed(_ field: String) throws {
        let error = try #require(throws: PushProviderError.self) {
            try FCMServiceAccount(json: Self.json(replacing: (field, 42)))
        }
        #expect(error.message.contains("\"\(field)\" must be a string"))
    }

    @Test func emptyFieldIsNamed() throws {
        let error = try #require(throws: PushProviderError.self) {
            try FCMServiceAccount(json: Self.json(replacing: ("client_email", "")))
        }
        #expect(error.message.contains("\"client_email\" is empty"))
    }

    @Test(arguments: ["", "not json", "[1,2]", "{\"private_key\": \"\(secret.prefix(20))"])
    func notJSONObject(_ text: String) throws {
        let error = try #require(throws: PushProviderError.self) { try FCMServiceAccount(json: Data(text.utf8)) }
        #expect(error.code == .invalidServiceAccount)
        #expect(!error.description.contains("PRIVATE KEY"))
    }

    @Test func printingNeverShowsTheKey() throws {
        let account = try FCMServiceAccount(json: Self.json())
        #expect(!"\(account)".contains("TOPSECRET"))
        #expect(!String(reflecting: account).contains("TOPSECRET"))
        var dumped = ""
        dump(account, to: &dumped)
        #expect(!dumped.contains("TOPSECRET"))
    }
}
