import { inflateSync } from 'node:zlib';
import t from 'tap';
import { decodePng, encodePng } from '../../../renderer/og/typeset/png.ts';

function chunks(png: Buffer): { type: string; data: Buffer }[] {
  const out: { type: string; data: Buffer }[] = [];
  for (let p = 8; p < png.length; ) {
    const length = png.readUInt32BE(p);
    out.push({ type: png.toString('latin1', p + 4, p + 8), data: png.subarray(p + 8, p + 8 + length) });
    p += 12 + length;
  }
  return out;
}

t.test('the encoder writes a valid RGB PNG that decodes to the same pixels', async (t) => {
  const width = 37;
  const height = 11;
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < rgba.length; i += 4) {
    rgba[i] = (i * 7) & 255;
    rgba[i + 1] = (i * 13) & 255;
    rgba[i + 2] = (i >> 3) & 255;
    rgba[i + 3] = 255;
  }
  const png = encodePng(rgba, width, height);
  t.same([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'signature');
  const list = chunks(png);
  t.same(list.map((c) => c.type), ['IHDR', 'IDAT', 'IEND']);
  const ihdr = list[0]!.data;
  t.same([ihdr.readUInt32BE(0), ihdr.readUInt32BE(4), ihdr[8], ihdr[9], ihdr[12]], [width, height, 8, 2, 0], '8-bit RGB, not interlaced');
  t.equal(inflateSync(list[1]!.data).length, (width * 3 + 1) * height, 'one filter byte and three bytes a pixel per row');
  const back = decodePng(png);
  t.same([back.width, back.height], [width, height]);
  t.same(Buffer.from(back.data), Buffer.from(rgba), 'the same pixels');
});

t.test('a corrupt file is refused', async (t) => {
  t.throws(() => decodePng(Buffer.from('not a png at all')), /not a PNG/);
});
