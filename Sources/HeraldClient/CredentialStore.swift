public import Foundation
import Synchronization

/// What a device keeps between launches: its sign-in token and its registration id.
public struct StoredCredentials: Sendable, Hashable, Codable {
    public var username: String?
    public var token: String?
    public var tokenExpiresAt: Date?
    public var registrationID: String?

    public init(username: String? = nil, token: String? = nil, tokenExpiresAt: Date? = nil, registrationID: String? = nil) {
        self.username = username
        self.token = token
        self.tokenExpiresAt = tokenExpiresAt
        self.registrationID = registrationID
    }
}

/// Where ``HeraldClient`` keeps ``StoredCredentials``: the Keychain on Apple platforms, a
/// file elsewhere, memory in tests.
public protocol CredentialStore: Sendable {
    func load() throws -> StoredCredentials
    func save(_ credentials: StoredCredentials) throws
}

/// Keeps credentials in memory only.
public final class InMemoryCredentialStore: CredentialStore {
    private let credentials: Mutex<StoredCredentials>

    public init(_ credentials: StoredCredentials = StoredCredentials()) {
        self.credentials = Mutex(credentials)
    }

    public func load() throws -> StoredCredentials {
        credentials.withLock { $0 }
    }

    public func save(_ credentials: StoredCredentials) throws {
        self.credentials.withLock { $0 = credentials }
    }
}

/// Keeps credentials in a JSON file readable by its owner only (mode 0600).
public struct FileCredentialStore: CredentialStore {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    public func load() throws -> StoredCredentials {
        guard FileManager.default.fileExists(atPath: path) else { return StoredCredentials() }
        return try JSONDecoder().decode(StoredCredentials.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    public func save(_ credentials: StoredCredentials) throws {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(credentials).write(to: url, options: .atomic)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }
}
