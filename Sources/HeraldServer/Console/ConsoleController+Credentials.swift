import Foundation
import HeraldCore
import HeraldHub
import HeraldPush
import Logging

/// The push credentials of a hub as the hub page lists them: per platform, whose they are,
/// how they sign in, and whether they work (with the last error and the expiry date).
extension ConsoleController {
    func credentials(_ hub: String) async throws -> [[String: Any]] {
        let engine = try await hubs.engine(named: hub)
        return try await hubs.credentialStates(hub: hub).map { state -> [String: Any] in
            var details: [String] = []
            if let error = state.lastError {
                details.append("Last error\(state.lastErrorAt.map { " (\(ConsolePages.date($0)))" } ?? ""): \(error)")
            }
            if let success = state.lastSuccessAt { details.append("Last worked \(ConsolePages.date(success))") }
            if let expiry = state.expiresAt {
                let days = Int(expiry.timeIntervalSinceNow / 86_400)
                details.append("Expires \(ConsolePages.date(expiry))\(days < 30 ? " — in \(max(0, days)) days" : "")")
            }
            let budget = engine?.budget(for: state.platform).map { [Self.describe($0.snapshot())] } ?? []
            return [
                "platform": state.platform.rawValue, "method": state.method,
                "source": state.source == .server ? "the server's" : "",
                "status": state.status.rawValue,
                "details": ((details.isEmpty ? ["Not used yet"] : details) + budget).joined(separator: " · "),
            ]
        }
    }

    /// A credential's send budget in a line: its rate, this node's share of it, how full it
    /// is, and a throttling pause.
    static func describe(_ budget: SendBudget.Snapshot) -> String {
        guard let rate = budget.rate else {
            return budget.pausedFor > .zero
                ? "Sends paused \(Int(budget.pausedFor.seconds.rounded(.up))) s: the push service throttled this credential" : "No send limit"
        }
        var line = "Send budget \(rate.perMinute.grouped)/min"
        if let share = budget.nodeShare, Int(share.rounded()) != rate.perMinute { line += " (this node's share \(Int(share.rounded()).grouped)/min)" }
        if let available = budget.available {
            line +=
                available >= 0
                ? ", \(Int(available).grouped) of \(Int(budget.burst).grouped) free now"
                : ", \(Int(-available).grouped) sends waiting for it"
        }
        if budget.pausedFor > .zero { line += ", paused \(Int(budget.pausedFor.seconds.rounded(.up))) s: the push service throttled it" }
        return line
    }
}
