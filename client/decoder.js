// decoder.js: turns the encoded payload of a tile into something a 2D canvas can draw.
//
// The interface, per codec name of the frame header ("jpeg", "png"; a video codec later):
//
//   const d = createDecoder('jpeg');
//   const drawable = await d.decode(tile);  // tile: {codec, mime, seq, index, x, y, w, h, data: Uint8Array}
//   ctx.drawImage(drawable.image, ...);     // drawable: {image: CanvasImageSource, width, height, close()}
//   drawable.close();                       // frees the decoded pixels (ImageBitmap / VideoFrame close())
//   d.reset();                              // the stream starts over (reconnect): forget decoder state
//   d.close();                              // the view goes away
//
// decode() may be called for the next tiles before earlier ones resolve (tiles decode in parallel); the view
// draws a frame only when all its tiles have resolved, in arrival order. A decode that fails rejects; the view
// counts it and acks the frame anyway. Today's decoder decodes every tile on its own with createImageBitmap
// (stateless: JPEG and PNG are complete files). A WebCodecs VideoDecoder-based one would keep state across
// frames (key frames, reference frames), resolve with VideoFrames in output order, and use reset() on
// reconnect: register it with registerDecoder('h264', factory) next to this one.

/** Stateless still-image decoder: each tile is a complete JPEG or PNG file, decoded by createImageBitmap. */
class ImageBitmapDecoder {
  constructor(codec) {
    this.codec = codec;
    this.closed = false;
  }

  async decode(tile) {
    if (this.closed) throw new Error('decoder closed');
    const bitmap = await createImageBitmap(new Blob([tile.data], { type: tile.mime }));
    return { image: bitmap, width: bitmap.width, height: bitmap.height, close: () => bitmap.close() };
  }

  reset() {}                                     // nothing carries over from one tile to the next

  close() { this.closed = true; }
}

const factories = new Map([
  ['jpeg', (codec) => new ImageBitmapDecoder(codec)],
  ['png', (codec) => new ImageBitmapDecoder(codec)],
]);

/** Adds (or replaces) the decoder of a codec name: factory(codecName) -> {decode, reset, close}. */
export function registerDecoder(codecName, factory) {
  factories.set(codecName, factory);
}

/** A new decoder for codecName; throws for a codec nobody registered. */
export function createDecoder(codecName) {
  const f = factories.get(codecName);
  if (!f) throw new Error(`rcanvas: no decoder for codec ${codecName}`);
  return f(codecName);
}

/** The decoders of one view: one per codec name, made when its first tile comes. */
export class DecoderSet {
  constructor() { this.decoders = new Map(); }

  get(codecName) {
    let d = this.decoders.get(codecName);
    if (!d) { d = createDecoder(codecName); this.decoders.set(codecName, d); }
    return d;
  }

  reset() { for (const d of this.decoders.values()) d.reset(); }

  close() {
    for (const d of this.decoders.values()) d.close();
    this.decoders.clear();
  }
}
