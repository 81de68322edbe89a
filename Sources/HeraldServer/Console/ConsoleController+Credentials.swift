import Foundation
import Logging
import HeraldCore
import HeraldHub
import HeraldPush

/// The push credentials of a hub as the hub page lists them: per platform, whose they are,
/// how they sign in, and whether they work (with the last error and the expiry date).
extension ConsoleController {
    func credentials(_ hub: String) async throws -> [[String: Any]] {
        try await hubs.credentialStates(hub: hub).map { state -> [String: Any] in
            var details: [String] = []
            if let error = state.lastError {
                details.append("Last error\(state.lastErrorAt.map { " (\(ConsolePages.date($0)))" } ?? ""): \(error)")
            }
            if let success = state.lastSuccessAt { details.append("Last worked \(ConsolePages.date(success))") }
            if let expiry = state.expiresAt {
                let days = Int(expiry.timeIntervalSinceNow / 86_400)
                details.append("Expires \(ConsolePages.date(expiry))\(days < 30 ? " — in \(max(0, days)) days" : "")")
            }
            return [
                "platform": state.platform.rawValue, "method": state.method,
                "source": state.source == .server ? "the server's" : "",
                "status": state.status.rawValue,
                "details": details.isEmpty ? "Not used yet" : details.joined(separator: " · "),
            ]
        }
    }
}
