"""The script of the interactive rollout page (:mod:`contactkit.report.viewer`): a canvas-2D renderer written for it.

Camera as MuJoCo's free camera (look-at point, distance, azimuth and elevation in degrees; 45° vertical field of
view). Triangles are flat-shaded by the angle to the view direction and painted far to near. ``window.viewer``
(``setFrame``, ``frames``) and ``window.pageCheck`` (used by the browser test: pixels drawn at the first and the
last frame) let a script drive and inspect the page.
"""

VIEWER_JS = r"""
(() => {
const D = JSON.parse(document.getElementById('data').textContent);
const cv = document.getElementById('view'), g = cv.getContext('2d');
const slider = document.getElementById('t'), label = document.getElementById('label');
const playBtn = document.getElementById('play');
const show = id => document.getElementById(id).checked;
const N = D.time.length, FOVY = 45 * Math.PI / 180, BG = [32, 35, 42];
let az = D.camera.azimuth * Math.PI / 180, el = D.camera.elevation * Math.PI / 180;
let dist = D.camera.distance, k = 0, timer = null;
slider.max = N - 1;
if (!D.predicted) document.getElementById('show-pred').parentElement.style.display = 'none';

const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
function qrot(q, v) {  // rotate v by the unit quaternion q = (w, x, y, z)
  const [w, x, y, z] = q, t = [2 * (y * v[2] - z * v[1]), 2 * (z * v[0] - x * v[2]), 2 * (x * v[1] - y * v[0])];
  return [v[0] + w * t[0] + y * t[2] - z * t[1], v[1] + w * t[1] + z * t[0] - x * t[2],
          v[2] + w * t[2] + x * t[1] - y * t[0]];
}
function camera() {
  const f = [Math.cos(el) * Math.cos(az), Math.cos(el) * Math.sin(az), Math.sin(el)];
  const L = D.camera.lookat, eye = [L[0] - dist * f[0], L[1] - dist * f[1], L[2] - dist * f[2]];
  const n = Math.hypot(f[0], f[1]) || 1, r = [f[1] / n, -f[0] / n, 0];
  return {f, eye, r, u: cross(r, f), F: cv.height / (2 * Math.tan(FOVY / 2))};
}
function project(c, p) {
  const d = sub(p, c.eye), z = Math.max(dot(d, c.f), 1e-6);
  return [cv.width / 2 + c.F * dot(d, c.r) / z, cv.height / 2 - c.F * dot(d, c.u) / z, z];
}
function addMesh(tris, c, mesh, place, rgb, alpha) {
  const v = mesh.v.map(place);
  for (const [a, b, d] of mesh.f) {
    const A = v[a], B = v[b], C = v[d], n = cross(sub(B, A), sub(C, A)), nn = Math.hypot(...n) || 1;
    const shade = 0.35 + 0.65 * Math.abs(dot(n, c.f)) / nn;
    const P = [A, B, C].map(p => project(c, p));
    tris.push({z: (P[0][2] + P[1][2] + P[2][2]) / 3, P, ghost: alpha < 1,
               color: `rgba(${rgb.map(x => Math.round(x * shade)).join(',')},${alpha})`});
  }
}
function arrow(c, from, to, color) {
  const a = project(c, from), b = project(c, to), dx = b[0] - a[0], dy = b[1] - a[1], L = Math.hypot(dx, dy);
  if (L < 2) return;
  g.strokeStyle = g.fillStyle = color; g.lineWidth = 3;
  g.beginPath(); g.moveTo(a[0], a[1]); g.lineTo(b[0], b[1]); g.stroke();
  const ux = dx / L, uy = dy / L, h = Math.min(12, 0.4 * L);
  g.beginPath(); g.moveTo(b[0], b[1]); g.lineTo(b[0] - h * ux - 0.5 * h * uy, b[1] - h * uy + 0.5 * h * ux);
  g.lineTo(b[0] - h * ux + 0.5 * h * uy, b[1] - h * uy - 0.5 * h * ux); g.closePath(); g.fill();
}
function paint(tris) {
  tris.sort((a, b) => b.z - a.z);
  for (const t of tris) {
    g.fillStyle = t.color; g.beginPath(); g.moveTo(t.P[0][0], t.P[0][1]);
    g.lineTo(t.P[1][0], t.P[1][1]); g.lineTo(t.P[2][0], t.P[2][1]); g.closePath(); g.fill();
  }
}
function draw() {
  const c = camera(), tris = [];
  g.fillStyle = `rgb(${BG.join(',')})`; g.fillRect(0, 0, cv.width, cv.height);
  for (const m of D.meshes.statics) addMesh(tris, c, m, p => p, [165, 165, 175], 1);
  const tracks = [[D.measured, [217, 128, 51], 1]];
  if (D.predicted && show('show-pred')) tracks.push([D.predicted, [70, 130, 230], 0.55]);
  for (const [T, rgb, alpha] of tracks) {
    const q = T.quat[k], p = T.pos[k];
    const place = v => { const w = qrot(q, v); return [w[0] + p[0], w[1] + p[1], w[2] + p[2]]; };
    for (const m of D.meshes.tool) addMesh(tris, c, m, place, rgb, alpha);
  }
  paint(tris.filter(t => !t.ghost));
  paint(tris.filter(t => t.ghost));  // the translucent prediction on top: seen even where it sank into a part
  tracks.forEach(([T], i) => {
    if (show('show-ft')) {
      arrow(c, T.origin[k], T.force[k], i ? 'rgb(255,150,60)' : 'rgb(230,30,30)');
      arrow(c, T.origin[k], T.torque[k], i ? 'rgb(120,200,255)' : 'rgb(40,90,240)');
    }
    if (show('show-contacts')) for (const p of T.contacts[k]) {
      const s = project(c, p);
      g.fillStyle = 'rgb(40,210,70)'; g.beginPath(); g.arc(s[0], s[1], 4, 0, 2 * Math.PI); g.fill();
    }
  });
  let text = `t ${D.time[k].toFixed(2)} s  (state ${k} of ${N - 1})  measured |F| ${D.measured.force_N[k].toFixed(2)} N`
    + `, ${D.measured.contacts[k].length} contact point(s)`;
  if (D.predicted) text += `  ·  ${D.predicted_name || 'predicted'} |F| ${D.predicted.force_N[k].toFixed(2)} N`;
  label.textContent = text;
}
function setFrame(i) { k = Math.max(0, Math.min(N - 1, i | 0)); slider.value = k; draw(); }
function play() {
  if (timer) { clearInterval(timer); timer = null; playBtn.textContent = 'play'; return; }
  const dt = N > 1 ? 1000 * (D.time[1] - D.time[0]) : 50;
  if (k >= N - 1) setFrame(0);
  playBtn.textContent = 'pause';
  timer = setInterval(() => { if (k >= N - 1) play(); else setFrame(k + 1); }, dt);
}
slider.addEventListener('input', () => setFrame(+slider.value));
playBtn.addEventListener('click', play);
for (const id of ['show-pred', 'show-contacts', 'show-ft']) {
  document.getElementById(id).addEventListener('change', draw);
}
let drag = null;
cv.addEventListener('pointerdown', e => { drag = [e.clientX, e.clientY]; cv.setPointerCapture(e.pointerId); });
cv.addEventListener('pointerup', () => { drag = null; });
cv.addEventListener('pointermove', e => {
  if (!drag) return;
  az -= 0.01 * (e.clientX - drag[0]); el = Math.max(-1.55, Math.min(1.55, el - 0.01 * (e.clientY - drag[1])));
  drag = [e.clientX, e.clientY]; draw();
});
cv.addEventListener('wheel', e => {
  e.preventDefault(); dist *= Math.exp(0.001 * e.deltaY); draw();
}, {passive: false});
document.addEventListener('keydown', e => {
  if (e.key === 'ArrowRight') setFrame(k + 1); else if (e.key === 'ArrowLeft') setFrame(k - 1);
  else if (e.key === ' ') { e.preventDefault(); play(); }
});
function inked() {
  const px = g.getImageData(0, 0, cv.width, cv.height).data;
  let n = 0, sum = 0;
  for (let i = 0; i < px.length; i += 4) {
    if (px[i] !== BG[0] || px[i + 1] !== BG[1] || px[i + 2] !== BG[2]) {
      n++; sum = (sum * 31 + px[i] + i) % 1000000007;
    }
  }
  return {pixels: n, hash: sum};
}
window.viewer = {setFrame, frames: N};
window.pageCheck = () => {
  setFrame(0); const first = inked(), label0 = label.textContent;
  setFrame(N - 1); const last = inked();
  return {frames: N, first, last, label_first: label0, label_last: label.textContent};
};
setFrame(0);
})();
"""
"""The page's script (plain ES2017, no library)."""
