/// Where provider tokens outlive the process and are shared by every node of a deployment.
///
/// APNs refuses a key's new provider token more often than every 20 minutes, so a restarted
/// process, or a second node, must go on with the token already in use rather than sign its
/// own. Herald keeps tokens with its data (the data directory, or the database that several
/// nodes share); a provider reads and offers them through this protocol and knows nothing
/// of where they are.
public protocol ProviderTokenStorage: Sendable {
    /// The value stored under `name`, if any.
    func storedToken(named name: String) async throws -> String?

    /// Stores `value` under `name` if what is stored there is still `expected` (`nil`:
    /// nothing). Returns what is stored afterwards: `value`, or what another process stored
    /// first.
    func replaceStoredToken(named name: String, expected: String?, with value: String) async throws -> String
}
