import Foundation
import HeraldCore
import Logging
import NIOCore

extension WebPushProvider: HTTPPushService {
    var serviceName: String { "the Web Push service" }

    /// The reason of an answer that is not a 2xx: `reason` (Apple, the Herald emulator),
    /// else `error` (Mozilla's autopush), else `nil`. Only the first 200 characters are kept.
    func answer(to response: HTTPPushResponse) -> String? {
        guard !(200...202).contains(response.status), let body = response.body else { return nil }
        struct ErrorBody: Decodable {
            var reason: String?
            var error: String?
        }
        guard let decoded = try? JSONDecoder().decode(ErrorBody.self, from: Data(body.readableBytesView)),
            let reason = decoded.reason ?? decoded.error
        else { return nil }
        return String(reason.prefix(200))
    }

    func classify(_ response: HTTPPushResponse, answer reason: String?, retryAfter: Double?) -> PushResult {
        Self.classify(status: response.status, reason: reason, retryAfter: retryAfter)
    }

    func metadata(_ response: HTTPPushResponse, answer reason: String?) -> Logger.Metadata {
        ["webpush.status": "\(response.status)", "webpush.reason": "\(reason ?? "")"]
    }
}
