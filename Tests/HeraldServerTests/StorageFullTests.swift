import Foundation
import HTTPTypes
import HeraldCore
import HeraldHub
import HeraldSQLite
import HeraldServer
import Hummingbird
import HummingbirdTesting
import Testing

/// A store whose disk is full: writes answer `507` with Herald's JSON error naming the cause,
/// `/ready` says the store cannot write, nothing written before is lost, and writes work again
/// once there is room. SQLite's own limit on the file's pages (`max_page_count`) stands in for
/// the disk: SQLite then fails the same way, with `SQLITE_FULL`.
@Suite struct StorageFullTests {
    static let metricsToken = "metrics-token-storage-full"

    @Test func aFullDiskIsA507AndUnreadyUntilThereIsRoom() async throws {
        try await TestHerald.withHerald(configure: { $0.metricsToken = Self.metricsToken }) { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                var saved: [String] = []
                // The file may not grow from here on.
                let pages = try #require(try await herald.store.integerForTesting("PRAGMA page_count"))
                try await herald.store.executeForTesting("PRAGMA max_page_count = \(pages)")

                var full: TestResponse?
                for n in 0..<400 where full == nil {
                    let tags = (0..<50).map { "tag-\(n)-\($0)-" + String(repeating: "x", count: 40) }
                    let handle = String(format: "%064x", n + 1)
                    let id = try await client.execute(uri: "/api/register?handle=\(handle)", method: .post, headers: alice) { response in
                        response.status == .ok ? try JSONDecoder().decode(String.self, from: response.body) : nil
                    }
                    guard let id else { continue }
                    let tagList = try String(decoding: JSONEncoder().encode(tags), as: UTF8.self)
                    try await client.execute(
                        uri: "/api/register/\(id)", method: .put, headers: alice,
                        body: .json(#"{"Platform":"apns","Handle":"\#(handle)","Tags":\#(tagList)}"#)
                    ) { response in
                        if response.status == .ok { saved.append(id) } else { full = response }
                    }
                }
                let refused = try #require(full, "the store never filled up")
                #expect(refused.status.code == 507, "\(refused.status) \(String(buffer: refused.body))")
                #expect(refused.headers[.contentType]?.hasPrefix("application/json") == true)
                let body = String(buffer: refused.body)
                #expect(body.contains(#""code":"insufficientStorage""#) && body.contains("storage is full"), "\(body)")

                try await client.execute(uri: "/ready", method: .get, headers: [.authorization: "Bearer \(Self.metricsToken)"]) { response in
                    #expect(response.status == .serviceUnavailable)
                    #expect(String(buffer: response.body).contains("the store cannot write: its disk is full"), "\(String(buffer: response.body))")
                }
                // Everything acknowledged is there.
                for id in saved { #expect(try await herald.store.registration(id: id) != nil) }

                // Room again: /ready sees it (its check is at most a second old), and writes work.
                try await herald.store.executeForTesting("PRAGMA max_page_count = 1073741823")
                try await Task.sleep(for: .milliseconds(1100))
                try await client.execute(uri: "/ready", method: .get) { response in
                    #expect(response.status == .ok, "\(String(buffer: response.body))")
                }
                _ = try await client.register(alice, handle: String(repeating: "cd", count: 32))
            }
        }
    }
}
