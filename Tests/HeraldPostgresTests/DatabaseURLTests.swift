import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

@Suite("Database URLs")
struct DatabaseURLTests {
    @Test func aFullURLIsReadAsLibpqReadsIt() throws {
        let url = try DatabaseURL("postgresql://herald:s%40cret@db.example.com:6432/pushes?sslmode=verify-full&application_name=node-1")
        #expect(url.username == "herald")
        #expect(url.password == "s@cret")
        #expect(url.host == "db.example.com")
        #expect(url.port == 6432)
        #expect(url.database == "pushes")
        #expect(url.tlsMode == .verifyFull)
        #expect(url.applicationName == "node-1")
    }

    @Test func defaultsFollowLibpq() throws {
        let url = try DatabaseURL("postgres://herald@")
        #expect(url.host == "localhost")
        #expect(url.port == 5432)
        #expect(url.database == "herald")
        #expect(url.password == nil)
        #expect(url.tlsMode == .prefer)
    }

    @Test func aSocketDirectoryReplacesTheHost() throws {
        let url = try DatabaseURL("postgres://herald:pw@/herald?host=/run/postgresql")
        #expect(url.host == nil)
        #expect(url.socketPath == "/run/postgresql/.s.PGSQL.5432")
    }

    @Test func anIPv6HostLosesItsBrackets() throws {
        let url = try DatabaseURL("postgres://herald:pw@[::1]:5433/herald")
        #expect(url.host == "::1")
        #expect(url.description == "postgres://herald:***@[::1]:5433/herald")
    }

    @Test func theDescriptionNeverShowsThePassword() throws {
        let url = try DatabaseURL("postgres://herald:hunter2-very-secret@db:5432/herald?sslmode=require")
        #expect(url.description == "postgres://herald:***@db:5432/herald?sslmode=require")
        #expect(!"\(url)".contains("hunter2"))
        #expect(!String(reflecting: url).contains("hunter2"))
    }

    @Test(arguments: [
        "mysql://herald:pw@db/herald",
        "postgres://db/herald",
        "not a url at all",
        "postgres://herald:pw@db/herald?sslmode=sometimes",
        "postgres://herald:pw@db/herald?pool=3",
        "postgres://herald:pw@db/herald/extra",
        "postgres://herald:pw@db/herald?host=relative/dir",
        "postgres://herald:pw@db/herald?connect_timeout=-1",
    ])
    func aBadURLIsRefusedWithoutQuotingThePassword(_ text: String) {
        do {
            _ = try DatabaseURL(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.code == .badRequest)
            #expect(!error.message.contains(":pw@"))
        }
    }
}
