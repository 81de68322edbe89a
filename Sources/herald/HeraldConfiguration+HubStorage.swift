import HeraldCore
import HeraldHub
import HeraldPostgres
import HeraldSQLite
import HeraldStore
import Logging

extension HeraldConfiguration {
    /// How the hubs' engines deliver, from these settings.
    var engineConfiguration: HubEngine.Configuration {
        var engine = HubEngine.Configuration()
        engine.lease = .seconds(deliveryLeaseSeconds)
        engine.partitionSize = deliveryPartitionSize
        engine.pageSize = deliveryPageSize
        engine.channelHosts = PushChannelHosts(wns: wns.allowedHosts, webPush: webPush.allowedHosts)
        engine.jobQuota = JobQuota(maxJobs: jobsMaxKept, maxActiveJobs: jobsMaxActive, maxBytes: jobsMaxBytes)
        engine.maxJobFileBytes = jobFileMaxBytes
        engine.jobRetention = .seconds(jobsRetentionSeconds)
        return engine
    }

    /// Where the hubs are, in words: the database (without its password) or the data directory.
    var hubLocation: String {
        databaseURL.map { "the database \($0)" } ?? "the data directory \(dataDirectory)"
    }

    /// Runs `body` with the storage of the hubs: the PostgreSQL database of
    /// ``databaseURL`` — connected, its schema brought up to date, and its connections closed
    /// when `body` returns — or the data directory.
    func withHubStorage<T>(logger: Logger, _ body: (any HubStorage) async throws -> T) async throws -> T {
        guard let databaseURL else {
            return try await body(DirectoryHubStorage(dataDirectory: dataDirectory))
        }
        return try await PostgresDatabase.with(
            url: databaseURL, maximumConnections: databaseConnections, migrate: false, logger: logger
        ) { database in
            let applied = try await database.migrate()
            if !applied.isEmpty {
                logger.notice(
                    "Brought the database's schema up to date",
                    metadata: ["herald.store.database": "\(databaseURL)", "herald.store.migrations": "\(applied)"]
                )
            }
            return try await body(database)
        }
    }
}
