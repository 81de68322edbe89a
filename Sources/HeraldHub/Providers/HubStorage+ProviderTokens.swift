public import HeraldPush
public import HeraldStore

/// Provider tokens kept as shared values of a ``HeraldStore/HubStorage``: in the data
/// directory, or in the database every node shares.
public struct HubStorageProviderTokens: ProviderTokenStorage {
    public let storage: any HubStorage

    public init(storage: any HubStorage) {
        self.storage = storage
    }

    public func storedToken(named name: String) async throws -> String? {
        try await storage.sharedValue(named: name)
    }

    public func replaceStoredToken(named name: String, expected: String?, with value: String) async throws -> String {
        try await storage.replaceSharedValue(named: name, expected: expected, with: value)
    }
}
