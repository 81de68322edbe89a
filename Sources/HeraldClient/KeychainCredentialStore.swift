#if canImport(Security)
import Foundation
public import HeraldCore
import Security

/// Keeps ``StoredCredentials`` in the Keychain, as one generic password item (service
/// `Herald`), readable after the first unlock so that a background fetch triggered by a
/// silent notification can sign in while the device is locked, and never synced or restored
/// to another device.
///
/// Only on Apple platforms; elsewhere use ``FileCredentialStore``.
public struct KeychainCredentialStore: CredentialStore {
    public let service: String
    public let account: String
    /// A Keychain access group shared with an app extension (a notification service
    /// extension fetching rich content), or `nil` for the app's own.
    public let accessGroup: String?

    public init(service: String = "Herald", account: String = "credentials", accessGroup: String? = nil) {
        self.service = service
        self.account = account
        self.accessGroup = accessGroup
    }

    private var itemQuery: [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        return query
    }

    public func load() throws -> StoredCredentials {
        var query = itemQuery
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        switch status {
        case errSecSuccess:
            guard let data = result as? Data else { throw KeychainError(status: errSecDecode) }
            return try JSONDecoder().decode(StoredCredentials.self, from: data)
        case errSecItemNotFound:
            return StoredCredentials()
        default:
            throw KeychainError(status: status)
        }
    }

    public func save(_ credentials: StoredCredentials) throws {
        let attributes: [String: Any] = [
            kSecValueData as String: try JSONEncoder().encode(credentials),
            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
        ]
        var status = SecItemUpdate(itemQuery as CFDictionary, attributes as CFDictionary)
        if status == errSecItemNotFound {
            status = SecItemAdd(itemQuery.merging(attributes) { $1 } as CFDictionary, nil)
        }
        guard status == errSecSuccess else { throw KeychainError(status: status) }
    }
}

/// A Keychain call failed with this `OSStatus`.
///
/// Equality compares the code only (`CodedError`, in HeraldCore).
public struct KeychainError: CodedError {
    /// The `OSStatus` the Keychain returned.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let status: Int32

        public init(status: Int32) { self.status = status }

        /// `osstatus<status>`, safe as a metric label.
        public var description: String { "osstatus\(status)" }
    }

    public let code: Code
    public let message: String

    public init(status: Int32) {
        self.code = Code(status: status)
        self.message = "Keychain error \(status)"
    }

    /// The `OSStatus` the Keychain returned.
    public var status: Int32 { code.status }
}
#endif
