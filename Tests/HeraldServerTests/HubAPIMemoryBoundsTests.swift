import Foundation
import HeraldCore
import HeraldHub
import HeraldHubWire
import Testing

/// What a caller with no key, or with the public Listen key, can make the server keep in
/// memory: bounded whatever it sends.
@Suite struct HubAPIMemoryBoundsTests {
    static let path = "/\(HubTestServer.hubName)/registrations?\(HubTestServer.apiVersion)"

    @Test func paddedAndOversizedSignaturesAreRefused() async throws {
        try await HubTestServer.withServer { server in
            let url = server.baseURL + Self.path
            let listen = SharedAccessRule.defaultListenRuleName
            let token = server.token(url: url, keyName: listen, key: try await server.key(listen))

            let padded = try await server.wire(.GET, Self.path, auth: .header(token + "&pad=" + String(repeating: "x", count: 64)))
            #expect(expectHubError(padded, 401).contains("'pad'"))
            let oversized = try await server.wire(
                .GET, Self.path, auth: .header(token + "&sr2=" + String(repeating: "x", count: SharedAccessSignature.maximumHeaderBytes)))
            #expect(expectHubError(oversized, 401).contains("longer than"))
            #expect(server.catalog.verifiedSignatureCount == 0)
        }
    }

    /// One token spelled many ways (its parameters in another order, their names in another
    /// case) is one entry of the cache of verified signatures, not one per spelling.
    @Test func oneTokenIsCachedOnceHoweverItIsSpelled() async throws {
        try await HubTestServer.withServer { server in
            let url = server.baseURL + Self.path
            let full = SharedAccessRule.defaultFullRuleName
            let token = server.token(url: url, keyName: full, key: try await server.key(full))
            let parameters = token.dropFirst("SharedAccessSignature ".count).split(separator: "&").map(String.init)
            #expect(parameters.count == 4)
            var spellings: Set<String> = []
            for rotation in 0..<4 {
                let order = Array(parameters[rotation...] + parameters[..<rotation])
                spellings.insert("SharedAccessSignature " + order.joined(separator: "&"))
                let upper = order.map { pair in
                    let (name, value) = (pair.prefix { $0 != "=" }, pair.drop { $0 != "=" })
                    return name.uppercased() + value
                }
                spellings.insert("SharedAccessSignature " + upper.joined(separator: "&"))
            }
            #expect(spellings.count == 8)
            for spelling in spellings {
                let response = try await server.wire(.GET, Self.path, auth: .header(spelling))
                #expect(response.status == 200, "\(response.text)")
            }
            #expect(server.catalog.verifiedSignatureCount == 1)
        }
    }

    /// Hub names are matched case-insensitively: every spelling of the hub's name finds it,
    /// and the catalog keeps one definition for it, not one per spelling (with a token of a
    /// wrong key: each request is refused once the hub was looked up).
    @Test func everySpellingOfAHubsNameIsOneCachedDefinition() async throws {
        try await HubTestServer.withServer { server in
            let before = server.catalog.cachedDefinitionCount
            let name = HubTestServer.hubName
            var spellings: Set<String> = []
            for mask in 0..<64 {
                spellings.insert(String(name.enumerated().map { index, c in mask & (1 << (index % 6)) != 0 ? Character(c.uppercased()) : c }))
            }
            #expect(spellings.count == 64)
            for spelling in spellings {
                let url = "\(server.baseURL)/\(spelling)/registrations?\(HubTestServer.apiVersion)"
                let guess = server.token(url: url, hub: spelling, keyName: SharedAccessRule.defaultListenRuleName, key: SharedAccessRule.generateKey())
                let response = try await server.wire(.GET, url, auth: .header(guess))
                #expect(expectHubError(response, 401).contains("does not match"))
            }
            #expect(server.catalog.cachedDefinitionCount <= before + 1)
            #expect(server.catalog.cachedDefinitionCount <= 3)
        }
    }
}
