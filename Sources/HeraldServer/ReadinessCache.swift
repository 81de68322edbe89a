import HeraldHub
import Synchronization

/// The server's readiness, checked at most once every ``maximumAge``: `/ready` is open to
/// anyone, and each check pings every open hub's store. Callers that arrive while a check
/// runs wait for it rather than start their own.
final class ReadinessCache: Sendable {
    let hubs: HubRegistry
    let maximumAge: Duration
    private let last = Mutex<(started: ContinuousClock.Instant, check: Task<Readiness, Never>)?>(nil)

    init(hubs: HubRegistry, maximumAge: Duration = .seconds(1)) {
        self.hubs = hubs
        self.maximumAge = maximumAge
    }

    /// The readiness of a check started less than ``maximumAge`` ago, or of a new one.
    func current() async -> Readiness {
        let now = ContinuousClock.now
        let check = last.withLock { last -> Task<Readiness, Never> in
            if let last, now - last.started < maximumAge { return last.check }
            let hubs = self.hubs
            let check = Task { await hubs.readiness() }
            last = (now, check)
            return check
        }
        return await check.value
    }
}
