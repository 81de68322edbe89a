import Crypto
import Foundation
import HeraldHub
import HeraldMetrics
import Hummingbird
import NIOCore

/// `GET /metrics`: every family of ``HeraldMetrics`` in the Prometheus text format, the
/// gauges read from the stores just before (``HubRegistry/updateMetricGauges(now:)``).
///
/// With ``ServerConfiguration/metricsToken`` set, the page needs
/// `Authorization: Bearer <token>`; anything else gets 401. The token is compared by its
/// SHA-256 digest, in constant time.
struct MetricsController {
    let hubs: HubRegistry
    let metrics: HeraldMetrics
    let token: String?

    /// The Prometheus text format's media type.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    func addRoutes(to router: Router<AppRequestContext>) {
        router.get("metrics") { request, _ -> Response in
            try authorize(request)
            await hubs.updateMetricGauges()
            return Response(
                status: .ok,
                headers: [.contentType: Self.contentType],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.emit()))
            )
        }
    }

    private func authorize(_ request: Request) throws {
        guard let token else { return }
        guard Self.request(request, bears: token) else {
            throw HTTPError(.unauthorized, headers: [.wwwAuthenticate: #"Bearer realm="herald-metrics""#])
        }
    }

    /// Whether `request` has `Authorization: Bearer <token>`. The token is compared by its
    /// SHA-256 digest: digests of equal length, in constant time (swift-crypto's `==`).
    static func request(_ request: Request, bears token: String) -> Bool {
        let given = request.headers[.authorization].flatMap { value -> Substring? in
            let parts = value.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
            return parts[1]
        }
        guard let given else { return false }
        return SHA256.hash(data: Data(given.utf8)) == SHA256.hash(data: Data(token.utf8))
    }
}
