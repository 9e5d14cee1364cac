import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../../src/platform/clock.ts';
import { closeDatabase, openDatabase } from '../../src/platform/db.ts';
import { freshDatabase, type TestDatabase } from '../helpers/database.ts';
import { DB_KINDS, REDIS_URL } from '../helpers/env.ts';
import { capturingLogger, createFixtureService, type FixtureService, fixtureSettings, type FixtureTables } from '../helpers/platform-service.ts';
import { slowProxy } from '../helpers/slow-proxy.ts';
import { CERT_FILE, startSmtpServer, type TestSmtpServer } from '../helpers/smtp.ts';

async function post(service: FixtureService, url: string, body: object) {
  const r = await service.app.inject({ method: 'POST', url, payload: body });
  return { status: r.statusCode, body: r.json() };
}

for (const kind of DB_KINDS) {
  describe(`createServiceRuntime (${kind})`, () => {
    let database: TestDatabase;
    let smtp: TestSmtpServer;
    before(async () => {
      database = await freshDatabase(kind);
      smtp = await startSmtpServer();
    });
    after(async () => {
      await smtp.close();
      await database.drop();
    });
    const smtpSettings = () => ({ host: 'localhost', port: smtp.port, tlsCaFile: CERT_FILE });

    test('migrates the database; mail queued in a transaction is sent over SMTP (STARTTLS) from mail.from', async () => {
      const service = await createFixtureService(fixtureSettings(database, { smtp: smtpSettings() }));
      try {
        service.startWorkers();
        const r = await post(service, '/notes', { id: 'n1', text: 'Hello from the fixture.', to: 'reader@example.com' });
        assert.equal(r.status, 201);
        const mail = await smtp.waitFor((m) => m.to.includes('reader@example.com'));
        assert.equal(mail.secure, true, 'upgraded with STARTTLS');
        assert.equal(mail.subject, 'Note n1');
        assert.match(mail.raw, /^From: Fixture <fixture@example\.com>\r?$/m);
        assert.equal(mail.text.trimEnd(), 'Hello from the fixture.');
        const notes = await service.deps.db.selectFrom('notes').select('id').execute();
        assert.deepEqual(notes.map((n) => n.id), ['n1']);
      } finally {
        await service.close();
      }
    });

    test('without SMTP the email is printed to the log, links and all', async () => {
      const { log, lines } = capturingLogger();
      const service = await createFixtureService(fixtureSettings(database), { logger: log, processMetrics: false });
      try {
        await post(service, '/notes', { id: 'n2', text: 'Open https://example.com/x', to: 'logged@example.com' });
        assert.equal(await service.mailWorker.drain(), 1);
        const line = lines.find((l) => (l['mail'] as { to?: string } | undefined)?.to === 'logged@example.com');
        assert.ok(line, 'the email was logged');
        assert.match(String(line['msg']), /SMTP_HOST unset[\s\S]*https:\/\/example\.com\/x/);
      } finally {
        await service.close();
      }
    });

    test('jobs are built by name; startWorkers starts the enabled ones; runOnce claims one tick', async () => {
      const clock = new ManualClock();
      const service = await createFixtureService(fixtureSettings(database), { clock, processMetrics: false });
      try {
        assert.deepEqual([...service.jobs.keys()], ['fixture:tick', 'fixture:off']);
        assert.equal(await service.jobs.get('fixture:tick')!.runOnce(), true);
        assert.equal(await service.jobs.get('fixture:tick')!.runOnce(), false, 'once per tick');
        assert.equal(service.deps.ticks, 1);
      } finally {
        await service.close();
      }
    });

    test('close() lets background work a request started finish before the database closes', async () => {
      const settings = fixtureSettings(database);
      const service = await createFixtureService(settings);
      const r = await post(service, '/notes/later', { id: 'late', text: 'written after the reply' });
      assert.equal(r.status, 202);
      await service.close();
      const { db } = await openDatabase<FixtureTables>({ url: settings.databaseUrl, sqlitePath: settings.sqlitePath });
      try {
        const row = await db.selectFrom('notes').select('text').where('id', '=', 'late').executeTakeFirst();
        assert.equal(row?.text, 'written after the reply');
      } finally {
        await closeDatabase(db);
      }
    });

    test('mail queued by a process that closed before sending is sent by the next one', async () => {
      const settings = fixtureSettings(database, { smtp: smtpSettings() });
      const first = await createFixtureService(settings);
      await post(first, '/notes', { id: 'n3', text: 'Sent after a restart.', to: 'restart@example.com' });
      await first.close(); // its worker never started
      assert.ok(!smtp.received.some((m) => m.to.includes('restart@example.com')));
      const second = await createFixtureService(settings);
      try {
        second.startWorkers();
        const mail = await smtp.waitFor((m) => m.to.includes('restart@example.com'));
        assert.equal(mail.text.trimEnd(), 'Sent after a restart.');
      } finally {
        await second.close();
      }
    });
  });
}

describe('createServiceRuntime with Redis', { skip: !REDIS_URL && 'TEST_REDIS_URL is not set' }, () => {
  let database: TestDatabase;
  before(async () => {
    database = await freshDatabase('sqlite');
  });
  after(() => database.drop());

  test('start-up waits until the Redis client is ready, even over a slow connection', async () => {
    const proxy = await slowProxy(REDIS_URL!, 1000);
    const started = Date.now();
    const service = await createFixtureService(fixtureSettings(database, { redisUrl: proxy.url }));
    try {
      assert.ok(Date.now() - started >= 900, 'it waited for the connection');
      assert.equal(service.deps.redis?.status, 'ready');
      assert.equal(await service.deps.redis.ping(), 'PONG');
    } finally {
      await service.close();
      await proxy.close();
    }
    const status = (): string | undefined => service.deps.redis?.status;
    for (let i = 0; i < 50 && status() !== 'end'; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(status(), 'end', 'close() disconnects');
  });

  test('Redis unreachable does not stop start-up: after 5 s it goes on, with a warning', { timeout: 15_000 }, async () => {
    const { log, lines } = capturingLogger();
    const service = await createFixtureService(fixtureSettings(database, { redisUrl: 'redis://127.0.0.1:1' }), {
      logger: log,
      processMetrics: false,
    });
    try {
      assert.notEqual(service.deps.redis?.status, 'ready');
      assert.ok(lines.some((l) => /redis not ready after 5 s/.test(String(l['msg']))));
      assert.equal((await post(service, '/notes', { id: 'r1', text: 'still answering' })).status, 201);
    } finally {
      await service.close();
    }
  });
});

test('without REDIS_URL the runtime has no Redis client', async () => {
  const database = await freshDatabase('sqlite');
  const service = await createFixtureService(fixtureSettings(database));
  try {
    assert.equal(service.deps.redis, undefined);
  } finally {
    await service.close();
    await database.drop();
  }
});
