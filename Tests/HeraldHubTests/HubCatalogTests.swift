import Crypto
import Foundation
import HeraldCore
import HeraldHub
import HeraldHubWire
import HeraldSQLite
import HeraldStore
import Testing

@Suite("HubCatalog")
struct HubCatalogTests {
    /// A catalog over a fresh temporary data directory, removed afterwards.
    private func withCatalog<T>(_ body: (HubCatalog, String) async throws -> T) async throws -> T {
        let dataDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-hubs-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        return try await body(HubCatalog(dataDirectory: dataDirectory), dataDirectory)
    }

    private static let full = SharedAccessRule.defaultFullRuleName
    private static let listen = SharedAccessRule.defaultListenRuleName

    // MARK: Shared values

    @Test func sharedValuesAreReplacedOnlyWhileTheyAreTheOnesExpectedAndStayPrivate() async throws {
        try await withCatalog { _, dataDirectory in
            let storage = DirectoryHubStorage(dataDirectory: dataDirectory)
            #expect(try await storage.sharedValue(named: "a") == nil)
            #expect(try await storage.replaceSharedValue(named: "a", expected: nil, with: "one") == "one")
            #expect(try await storage.replaceSharedValue(named: "a", expected: nil, with: "other") == "one")
            #expect(try await storage.replaceSharedValue(named: "a", expected: "stale", with: "two") == "one")
            #expect(try await storage.replaceSharedValue(named: "a", expected: "one", with: "two") == "two")
            // Another process on the same data directory sees it.
            #expect(try await DirectoryHubStorage(dataDirectory: dataDirectory).sharedValue(named: "a") == "two")
            let mode = try FileManager.default.attributesOfItem(atPath: storage.sharedValuesPath)[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
    }

    @Test func aDamagedSharedValuesFileIsReportedAndNotOverwritten() async throws {
        try await withCatalog { _, dataDirectory in
            let storage = DirectoryHubStorage(dataDirectory: dataDirectory)
            try "{not json".write(toFile: storage.sharedValuesPath, atomically: true, encoding: .utf8)
            let read = await #expect(throws: HeraldError.self) { try await storage.sharedValue(named: "a") }
            #expect(read?.code == .internalError)
            #expect(read?.message.contains("shared-values.json is damaged") == true)
            let write = await #expect(throws: HeraldError.self) { try await storage.replaceSharedValue(named: "a", expected: nil, with: "x") }
            #expect(write?.message.contains("restore it from a backup") == true)
            // What was there is kept for whoever repairs it.
            #expect(try String(contentsOfFile: storage.sharedValuesPath, encoding: .utf8) == "{not json")
        }
    }

    // MARK: Create, list, delete

    @Test func createMakesTheDefaultRulesWithRandomKeys() async throws {
        try await withCatalog { catalog, dataDirectory in
            let hub = try await catalog.create(name: "myhub")
            #expect(hub.name == "myhub")
            #expect(hub.rules.map(\.name) == [Self.listen, Self.full])
            #expect(hub.rule(named: Self.listen)?.rights == [.listen])
            #expect(hub.rule(named: Self.full)?.rights == [.listen, .send, .manage])
            let keys = hub.rules.flatMap { [$0.primaryKey, $0.secondaryKey] }
            #expect(Set(keys).count == 4)
            for key in keys {
                #expect(key.count == 44)
                #expect(Data(base64Encoded: key)?.count == 32)
            }
            #expect(hub.credentials == HubCredentials())
            #expect(catalog.directoryStorage!.directory(of: "myhub") == "\(dataDirectory)/hubs/myhub")
            #expect(catalog.directoryStorage!.storePath(of: "myhub") == "\(dataDirectory)/hubs/myhub/herald.sqlite")
            #expect(FileManager.default.fileExists(atPath: "\(dataDirectory)/hubs/myhub/hub.json"))

            // Another catalog (another process) reads the same definition.
            #expect(try await HubCatalog(dataDirectory: dataDirectory).hub(named: "myhub") == hub)
        }
    }

    @Test func definitionFileIsReadableByItsOwnerOnly() async throws {
        try await withCatalog { catalog, _ in
            try await catalog.create(name: "secrets")
            let path = catalog.directoryStorage!.directory(of: "secrets") + "/hub.json"
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            try await catalog.rotate(name: "secrets", rule: Self.full, key: .primary)
            let rotatedMode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(rotatedMode == 0o600)
            let directoryMode = try FileManager.default.attributesOfItem(atPath: catalog.directoryStorage!.directory(of: "secrets"))[.posixPermissions] as? Int
            #expect(directoryMode == 0o700)
        }
    }

    /// A data directory an earlier release left readable by everyone (0755) is made private to
    /// its user, with its hubs folder, as soon as a hub is written.
    @Test func theDataDirectoryIsMadePrivate() async throws {
        try await withCatalog { catalog, dataDirectory in
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: dataDirectory)
            try await catalog.create(name: "tokens")
            for directory in [dataDirectory, "\(dataDirectory)/hubs"] {
                let mode = try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int
                #expect(mode == 0o700, "\(directory)")
            }
        }
    }

    @Test func nodesPreparingTheAppHubAtOnceShareOneHub() async throws {
        try await withCatalog { _, dataDirectory in
            // Catalogs of their own, as separate nodes have: neither sees the other's hub in its cache.
            let nodes = (0..<8).map { _ in HubCatalog(dataDirectory: dataDirectory) }
            let outcomes = try await withThrowingTaskGroup(of: HubCatalog.AppHubPreparation.self) { group in
                for node in nodes { group.addTask { try await node.prepareAppHub(named: "app", logger: hubTestLogger) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == .created }.count == 1)
            #expect(outcomes.filter { $0 == .existing }.count == 7)
            let storage = DirectoryHubStorage(dataDirectory: dataDirectory)
            #expect(try await storage.definitionNames() == ["app"])
            let taken = await #expect(throws: StoreError.self) {
                _ = try await storage.createDefinition(named: "APP", document: Data("{}".utf8))
            }
            #expect(taken?.code == .nameTaken)
        }
    }

    @Test func createRefusesAnExistingNameInAnyCase() async throws {
        try await withCatalog { catalog, _ in
            let first = try await catalog.create(name: "MyHub")
            for name in ["MyHub", "myhub", "MYHUB"] {
                let error = await #expect(throws: HeraldError.self) { try await catalog.create(name: name) }
                #expect(error?.code == .conflict)
                #expect(error?.message.contains("MyHub") == true)
            }
            // Unchanged, and found in any case.
            #expect(try await catalog.hub(named: "myhub") == first)
            #expect(try await catalog.list().count == 1)
        }
    }

    @Test func listIsSortedByName() async throws {
        try await withCatalog { catalog, _ in
            #expect(try await catalog.list().isEmpty)
            for name in ["zeta", "Alpha", "beta", "alpha2"] { try await catalog.create(name: name) }
            #expect(try await catalog.list().map(\.name) == ["Alpha", "alpha2", "beta", "zeta"])
        }
    }

    @Test func deleteRemovesTheDirectory() async throws {
        try await withCatalog { catalog, dataDirectory in
            try await catalog.create(name: "gone")
            try await catalog.create(name: "kept")
            _ = FileManager.default.createFile(atPath: catalog.directoryStorage!.storePath(of: "gone"), contents: Data("db".utf8))
            try await catalog.delete(name: "gone")
            #expect(!FileManager.default.fileExists(atPath: catalog.directoryStorage!.directory(of: "gone")))
            #expect(try await catalog.hub(named: "gone") == nil)
            #expect(try await catalog.list().map(\.name) == ["kept"])
            // Nothing left behind but the lock file and the other hub.
            let left = try FileManager.default.contentsOfDirectory(atPath: "\(dataDirectory)/hubs").filter { $0 != ".lock" }
            #expect(left == ["kept"])
            let error = await #expect(throws: HeraldError.self) { try await catalog.delete(name: "gone") }
            #expect(error?.code == .notFound)
        }
    }

    // MARK: Names

    @Test(arguments: ["a", "7", "my-hub", "Hub.1_x", "a.b-c_d", String(repeating: "h", count: 50), "apis", "admin2"])
    func validNames(name: String) async throws {
        try HubDefinition.validateName(name)
        try await withCatalog { catalog, _ throws in
            #expect(try await catalog.create(name: name).name == name)
        }
    }

    @Test(arguments: [
        "", "-hub", "hub-", ".hub", "hub.", "_hub", "hub_", "a/b", "..", "../x", "a b", "hüb", "hub!", "a\u{0}b",
        String(repeating: "h", count: 51), "api", "API", "health", "Metrics", "admin", "_emulator",
    ])
    func invalidNames(name: String) async throws {
        let error = #expect(throws: HeraldError.self) { try HubDefinition.validateName(name) }
        #expect(error?.code == .badRequest)
        #expect(error?.message.isEmpty == false)
        try await withCatalog { catalog, _ throws in
            await #expect(throws: HeraldError.self) { try await catalog.create(name: name) }
            #expect(try await catalog.hub(named: name) == nil)
            #expect(try await catalog.list().isEmpty)
        }
    }

    @Test func reservedNameMessageSaysWhy() {
        let error = #expect(throws: HeraldError.self) { try HubDefinition.validateName("health") }
        #expect(error?.message.contains("reserved") == true)
        let long = #expect(throws: HeraldError.self) { try HubDefinition.validateName(String(repeating: "x", count: 51)) }
        #expect(long?.message.contains("50") == true)
    }

    // MARK: Keys and rules

    /// A header verified once is not verified from scratch again, but what can change is checked
    /// every time: a rotated key, a removed right and the expiry end it at once.
    @Test func aVerifiedHeaderIsRefusedOnceItsKeyRotatesOrItExpires() async throws {
        try await withCatalog { catalog, _ in
            let hub = try await catalog.create(name: "cached")
            let rule = try #require(hub.rule(named: Self.full))
            let now = Date()
            let header = SharedAccessSignature.make(
                resource: "https://localhost/cached", keyName: rule.name, key: rule.primaryKey, expiry: now.addingTimeInterval(60)
            )
            let url = "https://localhost/cached/messages"
            for _ in 0..<2 {
                try await catalog.authorize(header: header, hub: "cached", requestURL: url, right: .send, now: now)
            }
            // Another hub's URL, a time past the expiry: refused, though the signature is known.
            await #expect(throws: HeraldError.self) {
                try await catalog.authorize(header: header, hub: "cached", requestURL: "https://localhost/other/messages", right: .send, now: now)
            }
            await #expect(throws: HeraldError.self) {
                try await catalog.authorize(header: header, hub: "cached", requestURL: url, right: .send, now: now.addingTimeInterval(61))
            }
            // The rule loses Send: 403 at once.
            try await catalog.removeRule(name: "cached", rule: Self.full)
            try await catalog.addRule(name: "cached", rule: "sender", rights: [.listen])
            let listenOnly = try #require(try await catalog.hub(named: "cached")?.rule(named: "sender"))
            let listenHeader = SharedAccessSignature.make(
                resource: "https://localhost/cached", keyName: "sender", key: listenOnly.primaryKey, expiry: now.addingTimeInterval(60)
            )
            try await catalog.authorize(header: listenHeader, hub: "cached", requestURL: url, right: .listen, now: now)
            do {
                try await catalog.authorize(header: listenHeader, hub: "cached", requestURL: url, right: .send, now: now)
                Issue.record("a Listen rule sent")
            } catch let error as HeraldError {
                #expect(error.code == .forbidden)
            }
            // The key rotates: the header verified a moment ago is refused at once.
            try await catalog.rotate(name: "cached", rule: "sender", key: .primary)
            do {
                try await catalog.authorize(header: listenHeader, hub: "cached", requestURL: url, right: .listen, now: now)
                Issue.record("a rotated key was accepted")
            } catch let error as HeraldError {
                #expect(error.code == .unauthorized)
            }
            // The removed rule's header too.
            await #expect(throws: HeraldError.self) {
                try await catalog.authorize(header: header, hub: "cached", requestURL: url, right: .send, now: now)
            }
        }
    }

    /// A header parsed once is found again by its exact text: a header that differs in one
    /// character of its signature is parsed and refused on its own, and more distinct headers
    /// than the cache holds are all still accepted.
    @Test func aKnownHeadersTwinIsParsedOnItsOwnAndManyHeadersStillPass() async throws {
        try await withCatalog { catalog, _ in
            let hub = try await catalog.create(name: "many")
            let rule = try #require(hub.rule(named: Self.full))
            let now = Date()
            let url = "https://localhost/many/messages"
            let headers = (0..<300).map { second in
                SharedAccessSignature.make(
                    resource: "https://localhost/many", keyName: rule.name, key: rule.primaryKey, expiry: now.addingTimeInterval(Double(60 + second)))
            }
            for header in headers + headers.prefix(3) {
                try await catalog.authorize(header: header, hub: "many", requestURL: url, right: .send, now: now)
            }
            let known = headers[299]
            let signature = try #require(known.range(of: "sig=")).upperBound
            let flipped = known[signature] == "A" ? "B" : "A"
            let twin = known.replacingCharacters(in: signature...signature, with: flipped)
            do {
                try await catalog.authorize(header: twin, hub: "many", requestURL: url, right: .send, now: now)
                Issue.record("a header with another signature was accepted")
            } catch let error as HeraldError {
                #expect(error.code == .unauthorized)
            }
            try await catalog.authorize(header: known, hub: "many", requestURL: url, right: .send, now: now)
        }
    }

    @Test func rotateReplacesOnlyTheChosenKey() async throws {
        try await withCatalog { catalog, _ in
            let before = try await catalog.create(name: "hub")
            let rotated = try await catalog.rotate(name: "hub", rule: Self.full, key: .primary)
            let old = try #require(before.rule(named: Self.full))
            let new = try #require(rotated.rule(named: Self.full))
            #expect(new.primaryKey != old.primaryKey)
            #expect(new.primaryKey.count == 44)
            #expect(new.secondaryKey == old.secondaryKey)
            #expect(rotated.rule(named: Self.listen) == before.rule(named: Self.listen))

            let again = try await catalog.rotate(name: "hub", rule: Self.full.lowercased(), key: .secondary)
            #expect(again.rule(named: Self.full)?.primaryKey == new.primaryKey)
            #expect(again.rule(named: Self.full)?.secondaryKey != old.secondaryKey)
            #expect(try await catalog.hub(named: "hub") == again)

            let noRule = await #expect(throws: HeraldError.self) { try await catalog.rotate(name: "hub", rule: "Nope", key: .primary) }
            #expect(noRule?.code == .notFound)
            #expect(noRule?.message.contains(Self.full) == true)
            let noHub = await #expect(throws: HeraldError.self) { try await catalog.rotate(name: "other", rule: Self.full, key: .primary) }
            #expect(noHub?.code == .notFound)
        }
    }

    @Test func addAndRemoveRules() async throws {
        try await withCatalog { catalog, _ in
            try await catalog.create(name: "hub")
            let added = try await catalog.addRule(name: "hub", rule: "SendOnly", rights: [.send])
            #expect(added.rule(named: "SendOnly")?.rights == [.send])
            #expect(added.rules.count == 3)

            let duplicate = await #expect(throws: HeraldError.self) { try await catalog.addRule(name: "hub", rule: "sendonly", rights: [.listen]) }
            #expect(duplicate?.code == .conflict)
            let manageAlone = await #expect(throws: HeraldError.self) { try await catalog.addRule(name: "hub", rule: "M", rights: [.manage]) }
            #expect(manageAlone?.code == .badRequest)
            let noRights = await #expect(throws: HeraldError.self) { try await catalog.addRule(name: "hub", rule: "N", rights: []) }
            #expect(noRights?.code == .badRequest)
            let badName = await #expect(throws: HeraldError.self) { try await catalog.addRule(name: "hub", rule: "a;b", rights: [.send]) }
            #expect(badName?.code == .badRequest)

            for index in 3..<SharedAccessRule.maximumRulesPerHub {
                try await catalog.addRule(name: "hub", rule: "Rule\(index)", rights: [.listen])
            }
            let tooMany = await #expect(throws: HeraldError.self) { try await catalog.addRule(name: "hub", rule: "OneMore", rights: [.listen]) }
            #expect(tooMany?.code == .badRequest)

            let removed = try await catalog.removeRule(name: "hub", rule: "SendOnly")
            #expect(removed.rule(named: "SendOnly") == nil)
            #expect(try await catalog.hub(named: "hub")?.rules.count == SharedAccessRule.maximumRulesPerHub - 1)
            let missing = await #expect(throws: HeraldError.self) { try await catalog.removeRule(name: "hub", rule: "SendOnly") }
            #expect(missing?.code == .notFound)
        }
    }

    @Test func connectionStringsCarryEachRulesKey() async throws {
        try await withCatalog { catalog, _ in
            let hub = try await catalog.create(name: "hub")
            let strings = catalog.connectionStrings(of: hub, endpoint: "sb://localhost:8443/")
            #expect(strings.map(\.rule) == [Self.listen, Self.full])
            for (rule, text) in strings {
                let parsed = try ConnectionString(parsing: text)
                #expect(parsed.endpoint == "sb://localhost:8443/")
                #expect(parsed.keyName == rule)
                #expect(parsed.key == hub.rule(named: rule)?.primaryKey)
            }
            #expect(strings[1].connectionString == "Endpoint=sb://localhost:8443/;SharedAccessKeyName=\(Self.full);SharedAccessKey=\(hub.rules[1].primaryKey)")
            let secondary = catalog.connectionStrings(of: hub, endpoint: "sb://push.example.com/", key: .secondary)
            #expect(try ConnectionString(parsing: secondary[0].connectionString).key == hub.rules[0].secondaryKey)
        }
    }

    // MARK: The cache

    @Test func cacheSeesAChangeMadeByAnotherProcess() async throws {
        try await withCatalog { server, dataDirectory in
            try await server.create(name: "hub")
            let cached = try #require(try await server.hub(named: "hub"))
            #expect(try await server.hub(named: "hub") == cached)

            // `herald hub rotate` in another process: another catalog on the same directory.
            let cli = HubCatalog(dataDirectory: dataDirectory)
            let rotated = try await cli.rotate(name: "hub", rule: Self.full, key: .primary)
            #expect(try await server.hub(named: "hub") == rotated)
            #expect(try await server.hub(named: "hub")?.rule(named: Self.full)?.primaryKey != cached.rule(named: Self.full)?.primaryKey)

            // A hand edit that replaces the file.
            var edited = rotated
            edited.rules.removeLast()
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            let path = server.directoryStorage!.directory(of: "hub") + "/hub.json"
            try encoder.encode(edited).write(to: URL(fileURLWithPath: path), options: .atomic)
            #expect(try await server.hub(named: "hub")?.rules.map(\.name) == [Self.listen])

            // Deleted elsewhere: gone here too.
            try await cli.delete(name: "hub")
            #expect(try await server.hub(named: "hub") == nil)
            #expect(try await server.list().isEmpty)
        }
    }

    @Test func damagedDefinitionIsAnErrorThatQuotesNothing() async throws {
        try await withCatalog { catalog, _ in
            let hub = try await catalog.create(name: "hub")
            let path = catalog.directoryStorage!.directory(of: "hub") + "/hub.json"
            let key = hub.rules[0].primaryKey
            try Data("{\"name\": \"hub\", \"rules\": [\"\(key)\"".utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            let error = await #expect(throws: HeraldError.self) { try await catalog.hub(named: "hub") }
            #expect(error?.code == .internalError)
            #expect(error?.message.contains(key) == false)
            // A damaged hub can still be deleted.
            try await catalog.delete(name: "hub")
            #expect(try await catalog.hub(named: "hub") == nil)
        }
    }

    // MARK: Credentials

    private static func fcmServiceAccount(
        privateKey: String = "-----BEGIN PRIVATE KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7AgEAAkEA\n-----END PRIVATE KEY-----\n", drop: String? = nil
    ) throws -> String {
        var object: [String: String] = [
            "type": "service_account",
            "project_id": "herald-tests",
            "client_email": "push@herald-tests.iam.gserviceaccount.com",
            "private_key": privateKey,
        ]
        if let drop { object[drop] = nil }
        return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    @Test func setCredentialsValidatesSavesAndRedacts() async throws {
        try await withCatalog { catalog, dataDirectory in
            try await catalog.create(name: "hub")
            let apnsKey = P256.Signing.PrivateKey().pemRepresentation
            let vapidKey = P256.Signing.PrivateKey()
            let account = try Self.fcmServiceAccount()
            let updated = try await catalog.setCredentials(name: "hub") { credentials in
                credentials.apns = .init(keyID: "ABC123DEFG", teamID: "TEAM123456", topic: "com.example.app", environment: "sandbox", privateKeyPEM: apnsKey)
                credentials.fcm = .init(serviceAccountJSON: account)
                credentials.wns = .init(packageSID: "ms-app://s-1-15-2-1", clientSecret: "wns-client-secret-value")
                credentials.webPush = .init(subject: "mailto:ops@example.com", vapidPrivateKeyPEM: vapidKey.pemRepresentation)
            }
            #expect(updated.credentials.apns?.environment == "sandbox")
            #expect(try await HubCatalog(dataDirectory: dataDirectory).hub(named: "hub")?.credentials == updated.credentials)

            let shown = updated.redacted + "\n" + "\(updated)" + "\n" + "\(updated.credentials)"
            for secret in [
                apnsKey, vapidKey.pemRepresentation, "wns-client-secret-value", "BEGIN PRIVATE KEY", updated.rules[0].primaryKey, updated.rules[1].secondaryKey,
            ] {
                #expect(!shown.contains(secret))
            }
            #expect(shown.contains("ABC123DEFG"))
            #expect(shown.contains("herald-tests"))
            #expect(shown.contains("ms-app://s-1-15-2-1"))
            let applicationServerKey = vapidKey.publicKey.x963Representation.base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(shown.contains(applicationServerKey))

            let cleared = try await catalog.setCredentials(name: "hub") { $0.clear(.wns) }
            #expect(cleared.credentials.wns == nil)
            #expect(cleared.credentials.apns != nil)
            #expect(cleared.redacted.contains("wns      not set"))
        }
    }

    @Test func invalidCredentialsChangeNothing() async throws {
        try await withCatalog { catalog, _ in
            let hub = try await catalog.create(name: "hub")
            let goodKey = P256.Signing.PrivateKey().pemRepresentation
            let cases: [(String, (inout HubCredentials) -> Void)] = [
                (
                    "APNs key",
                    {
                        $0.apns = .init(
                            keyID: "ABC123DEFG", teamID: "TEAM123456", topic: "com.example.app",
                            privateKeyPEM: "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----")
                    }
                ),
                ("key id", { $0.apns = .init(keyID: "ABC", teamID: "TEAM123456", topic: "com.example.app", privateKeyPEM: goodKey) }),
                ("team id", { $0.apns = .init(keyID: "ABC123DEFG", teamID: "TEAM 12345", topic: "com.example.app", privateKeyPEM: goodKey) }),
                ("topic", { $0.apns = .init(keyID: "ABC123DEFG", teamID: "TEAM123456", topic: "", privateKeyPEM: goodKey) }),
                (
                    "environment",
                    { $0.apns = .init(keyID: "ABC123DEFG", teamID: "TEAM123456", topic: "com.example.app", environment: "staging", privateKeyPEM: goodKey) }
                ),
                ("not JSON", { $0.fcm = .init(serviceAccountJSON: "project_id=x") }),
                ("project_id", { $0.fcm = .init(serviceAccountJSON: (try? Self.fcmServiceAccount(drop: "project_id")) ?? "") }),
                ("client_email", { $0.fcm = .init(serviceAccountJSON: (try? Self.fcmServiceAccount(drop: "client_email")) ?? "") }),
                ("private_key", { $0.fcm = .init(serviceAccountJSON: (try? Self.fcmServiceAccount(drop: "private_key")) ?? "") }),
                ("private_key PEM", { $0.fcm = .init(serviceAccountJSON: (try? Self.fcmServiceAccount(privateKey: "not a key")) ?? "") }),
                ("WNS secret", { $0.wns = .init(packageSID: "ms-app://s-1", clientSecret: "") }),
                ("WNS SID", { $0.wns = .init(packageSID: "ms app", clientSecret: "secret") }),
                ("subject", { $0.webPush = .init(subject: "ops@example.com", vapidPrivateKeyPEM: goodKey) }),
                ("VAPID key", { $0.webPush = .init(subject: "mailto:ops@example.com", vapidPrivateKeyPEM: "garbage") }),
            ]
            for (label, change) in cases {
                let error = await #expect(throws: HeraldError.self, "\(label)") { try await catalog.setCredentials(name: "hub", change) }
                #expect(error?.code == .badRequest, "\(label)")
                #expect(error?.message.contains(goodKey) == false, "\(label)")
            }
            #expect(try await catalog.hub(named: "hub") == hub)
        }
    }

    // MARK: Authorization

    private static let base = "https://localhost:8443"
    private static let now = Date(timeIntervalSince1970: 1_750_000_000)

    private func token(_ rule: String, key: String, resource: String = "\(base)/myhub", expiresIn: TimeInterval = 1200) throws -> SharedAccessSignature {
        try SharedAccessSignature(
            parsing: SharedAccessSignature.make(resource: resource, keyName: rule, key: key, expiry: Self.now.addingTimeInterval(expiresIn)))
    }

    @Test func authorizeAcceptsEitherKeyOfARuleWithTheRight() async throws {
        try await withCatalog { catalog, _ in
            let hub = try await catalog.create(name: "myhub")
            let full = try #require(hub.rule(named: Self.full))
            let url = "\(Self.base)/myhub/messages?api-version=2015-01"
            for key in [full.primaryKey, full.secondaryKey] {
                for right in AccessRight.allCases {
                    try await catalog.authorize(try token(Self.full, key: key), hub: "myhub", requestURL: url, right: right, now: Self.now)
                }
            }
            // A token for the namespace covers the hub; hub and rule names in any case.
            let namespaceToken = try token(Self.full.uppercased(), key: full.primaryKey, resource: "http://localhost:8443/")
            try await catalog.authorize(namespaceToken, hub: "MyHub", requestURL: url, right: .send, now: Self.now)
            let listen = try #require(hub.rule(named: Self.listen))
            try await catalog.authorize(
                try token(Self.listen, key: listen.secondaryKey), hub: "myhub", requestURL: "\(Self.base)/myhub/registrations", right: .listen, now: Self.now)
        }
    }

    @Test func authorizeRefusesWithAMessageThatSaysWhy() async throws {
        try await withCatalog { catalog, _ in
            let hub = try await catalog.create(name: "myhub")
            try await catalog.create(name: "otherhub")
            let full = try #require(hub.rule(named: Self.full))
            let listen = try #require(hub.rule(named: Self.listen))
            let url = "\(Self.base)/myhub/messages"
            let wrongKey = SharedAccessRule.generateKey()
            let cases: [(String, SharedAccessSignature, String, HeraldError.Code, String)] = [
                ("expired", try token(Self.full, key: full.primaryKey, expiresIn: -1), "myhub", .unauthorized, "expired"),
                ("expiring now", try token(Self.full, key: full.primaryKey, expiresIn: 0), "myhub", .unauthorized, "expired"),
                ("wrong key", try token(Self.full, key: wrongKey), "myhub", .unauthorized, "does not match"),
                ("another rule's key", try token(Self.full, key: listen.primaryKey), "myhub", .unauthorized, "does not match"),
                ("expired with a wrong key", try token(Self.full, key: wrongKey, expiresIn: -60), "myhub", .unauthorized, "does not match"),
                ("unknown rule", try token("SomeoneElse", key: full.primaryKey), "myhub", .unauthorized, "no shared access rule named 'SomeoneElse'"),
                ("unknown hub", try token(Self.full, key: full.primaryKey, resource: "\(Self.base)/nohub"), "nohub", .unauthorized, "no hub named 'nohub'"),
                ("sr for another hub", try token(Self.full, key: full.primaryKey, resource: "\(Self.base)/otherhub"), "myhub", .unauthorized, "does not cover"),
                ("sr for a longer name", try token(Self.full, key: full.primaryKey, resource: "\(Self.base)/myhub2"), "myhub", .unauthorized, "does not cover"),
                (
                    "sr on another host", try token(Self.full, key: full.primaryKey, resource: "https://example.com/myhub"), "myhub", .unauthorized,
                    "does not cover"
                ),
                (
                    "missing right", try token(Self.listen, key: listen.primaryKey), "myhub", .forbidden,
                    "requires the Manage right; rule \(Self.listen) has Listen"
                ),
            ]
            for (label, token, hubName, code, phrase) in cases {
                let right: AccessRight = label == "missing right" ? .manage : .send
                let error = await #expect(throws: HeraldError.self, "\(label)") {
                    try await catalog.authorize(token, hub: hubName, requestURL: url, right: right, now: Self.now)
                }
                #expect(error?.code == code, "\(label)")
                #expect(error?.message.contains(phrase) == true, "\(label): \(error?.message ?? "-")")
                for secret in [full.primaryKey, full.secondaryKey, listen.primaryKey, wrongKey, token.signature] {
                    #expect(error?.message.contains(secret) == false, "\(label)")
                }
            }
            // A token of one hub's rule does not open another hub with the same rule name.
            let other = try #require(try await catalog.hub(named: "otherhub")?.rule(named: Self.full))
            let crossed = await #expect(throws: HeraldError.self) {
                try await catalog.authorize(try token(Self.full, key: other.primaryKey), hub: "myhub", requestURL: url, right: .send, now: Self.now)
            }
            #expect(crossed?.code == .unauthorized)
        }
    }

    @Test func rotatedKeyStopsWorkingAtOnce() async throws {
        try await withCatalog { server, dataDirectory in
            let hub = try await server.create(name: "myhub")
            let old = try #require(hub.rule(named: Self.full))
            let url = "\(Self.base)/myhub/messages"
            try await server.authorize(try token(Self.full, key: old.primaryKey), hub: "myhub", requestURL: url, right: .send, now: Self.now)

            try await HubCatalog(dataDirectory: dataDirectory).rotate(name: "myhub", rule: Self.full, key: .primary)
            let error = await #expect(throws: HeraldError.self) {
                try await server.authorize(try token(Self.full, key: old.primaryKey), hub: "myhub", requestURL: url, right: .send, now: Self.now)
            }
            #expect(error?.code == .unauthorized)
            // The secondary key still works.
            try await server.authorize(try token(Self.full, key: old.secondaryKey), hub: "myhub", requestURL: url, right: .send, now: Self.now)
        }
    }
}
