import Foundation
import HeraldClient
import HeraldCore
import HeraldSQLite
import HeraldServer
import HeraldStore
import Hummingbird
import HummingbirdTesting
import Testing

@Suite struct ClientSDKTests {
    /// The token's bytes become lowercase hex, two digits a byte (not `description`, whose
    /// format changed across iOS versions), and the id is kept for the next launch.
    @Test func registerHexEncodesTheDeviceTokenAndKeepsTheID() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.live) { client in
                let base = URL(string: "http://127.0.0.1:\(try #require(client.port))")!
                let path = herald.directory + "/device-credentials.json"
                let device = HeraldClient(baseURL: base, credentials: FileCredentialStore(path: path))
                try await device.signUp(username: "alice", password: "alice-password")
                try await device.signIn(username: "alice", password: "alice-password")
                let token = Data((0..<32).map { UInt8($0 * 7 % 256) })
                let id = try await device.register(deviceToken: token, tags: ["news"])
                let stored = try #require(try await herald.store.registration(id: id))
                #expect(stored.handle == "00070e151c232a31383f464d545b626970777e858c939aa1a8afb6bdc4cbd2d9")
                #expect(stored.tags == ["news", "username:alice"])

                // A new launch reads the same file and updates the same registration.
                let relaunched = HeraldClient(baseURL: base, credentials: FileCredentialStore(path: path))
                #expect(try await relaunched.register(deviceToken: token, tags: ["sports"]) == id)
                #expect(try await herald.store.registration(id: id)?.tags == ["sports", "username:alice"])
                let attributes = try FileManager.default.attributesOfItem(atPath: path)
                #expect((attributes[.posixPermissions] as? Int) == 0o600)
            }
        }
    }
}
