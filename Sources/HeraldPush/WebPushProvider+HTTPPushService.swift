import AsyncHTTPClient
import Foundation
import HeraldCore
import Logging
import NIOCore
import NIOHTTP1

extension WebPushProvider: HTTPPushService {
    var serviceName: String { "the Web Push service" }

    /// The reason of an answer that is not a 2xx: `reason` (Apple, the Herald emulator),
    /// else `error` (Mozilla's autopush), else `nil`. Only the first 200 characters are kept.
    func answer(to response: HTTPClientResponse) async -> String? {
        guard !(200...202).contains(response.status.code) else {
            do { for try await _ in response.body {} } catch {}
            return nil
        }
        guard let bytes = try? await response.body.collect(upTo: 64 * 1024) else { return nil }
        struct ErrorBody: Decodable {
            var reason: String?
            var error: String?
        }
        guard let decoded = try? JSONDecoder().decode(ErrorBody.self, from: Data(bytes.readableBytesView)),
            let reason = decoded.reason ?? decoded.error
        else { return nil }
        return String(reason.prefix(200))
    }

    func classify(status: Int, answer reason: String?, headers: HTTPHeaders, retryAfter: Double?) -> PushResult {
        Self.classify(status: status, reason: reason, retryAfter: retryAfter)
    }

    func metadata(status: Int, answer reason: String?, headers: HTTPHeaders) -> Logger.Metadata {
        ["webpush.status": "\(status)", "webpush.reason": "\(reason ?? "")"]
    }
}
