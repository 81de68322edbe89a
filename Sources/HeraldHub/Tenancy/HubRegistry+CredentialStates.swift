import HeraldCore
import HeraldPush

extension HubRegistry {
    /// The state of the push credentials of the hub named `name`, one per platform it can
    /// deliver on (in the order of `Platform.allCases`): its own where it has them, the
    /// server's otherwise. Opens the hub if it is not open.
    ///
    /// - Throws: `HeraldError.notFound` when there is no such hub.
    public func credentialStates(hub name: String) async throws -> [PushCredentialState] {
        guard let engine = try await engine(named: name) else {
            throw HubCatalog.noSuchHub(name)
        }
        let shared = Set(serverProviders.map { ObjectIdentifier($0 as AnyObject) })
        let providers = engine.providers
        return Platform.allCases.compactMap { platform in
            guard let provider = providers[platform] else { return nil }
            return PushCredentialState(
                platform: platform,
                source: shared.contains(ObjectIdentifier(provider as AnyObject)) ? .server : .hub,
                health: provider.credentialHealth
            )
        }
    }
}
