public import HeraldCore
import HeraldStore

extension HubEngine {
    /// The number of registrations per platform (platforms with none are left out).
    public func registrationCountsByPlatform() async throws -> [Platform: Int] {
        try await store.registrationCountsByPlatform()
    }
}
